import csv, sys, collections
"""ops.py <ncu sass csv>: warp instructions per opcode for the two kernels, the difference."""


def load(path):
    ks = {}; cur = None; hdr = None
    for row in csv.reader(open(path)):
        if not row: continue
        if row[0] == "Kernel Name": cur = "%d:%s" % (len(ks), row[1]); ks[cur] = []; hdr = None; continue
        if row[0] == "Address": hdr = row; continue
        if hdr: ks[cur].append(dict(zip(hdr, row)))
    return ks
ks = load(sys.argv[1])
names=list(ks)
def opc(r):
    s=r["Source"].split()
    if not s: return "?"
    op = s[1] if s[0].startswith("@") else s[0]
    return op.split(".")[0]
agg=[]
for n in names:
    c=collections.Counter()
    for r in ks[n]: c[opc(r)]+=int(r["Instructions Executed"] or 0)
    agg.append(c)
allops=set(agg[0])|set(agg[1])
print("%-12s %10s %10s %10s"%("op","DG(M)","QG(M)","diff"))
for op in sorted(allops,key=lambda o:-(agg[1][o]-agg[0][o])):
    a,b=agg[0][op]/1e6,agg[1][op]/1e6
    if abs(b-a)>0.3 or max(a,b)>5: print("%-12s %10.2f %10.2f %10.2f"%(op,a,b,b-a))
