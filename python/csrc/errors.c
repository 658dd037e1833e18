/*
 * errors.c -- the Python exceptions of qgemm._C, shared by every other unit
 * (tensor.c, layout.c, contexts.c, torch.c, module.c): it calls none of them,
 * so no two units take symbols from each other.
 *
 *  - qgpy_errorf: a formatted message of a given exception type;
 *  - qgpy_raise_status: a failed library call becomes ValueError
 *    (QG_ERROR_INVALID_ARGUMENT, QG_ERROR_UNSUPPORTED) or RuntimeError (all
 *    else), with qg_last_error() (per thread) as the message.
 */
#include "qgpy.h"

#include <stdarg.h>
#include <stdio.h>

int qgpy_errorf(PyObject *type, const char *fmt, ...)
{
    char msg[1024];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(msg, sizeof msg, fmt, ap);
    va_end(ap);
    PyErr_SetString(type, msg);
    return -1;
}

PyObject *qgpy_raise_status(qg_status st)
{
    const char *msg = qg_last_error();
    if (!msg || !msg[0])
        msg = qg_status_string(st);
    PyObject *type = (st == QG_ERROR_INVALID_ARGUMENT || st == QG_ERROR_UNSUPPORTED)
                         ? PyExc_ValueError
                         : PyExc_RuntimeError;
    PyErr_SetString(type, msg);
    return NULL;
}
