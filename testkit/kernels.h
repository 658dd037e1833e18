/*
 * kernels.h -- the testkit's helper kernels (testkit/kernels/ (.cuh)), embedded
 * at build time by tools/embed.sh into build/testkit_kernels_embedded.c, as
 * the library embeds its own: the testkit is self-contained like libqgemm,
 * and the library carries no kernel only tests and the bench run. Internal
 * to the testkit (users call qgtk_kernel_source).
 */
#ifndef QGTK_KERNELS_H
#define QGTK_KERNELS_H

typedef struct { const char *name; const char *text; } qgtk_embedded_file;
extern const qgtk_embedded_file qgtk__kernel_files[];
extern const int qgtk__num_kernel_files;

#endif /* QGTK_KERNELS_H */
