"""loop.py <cuobjdump -sass file> [v]: the loops around the first QGMMA (instructions, opcode mix)."""
import re,sys,collections
ins=[]
for l in open(sys.argv[1]):
    m=re.match(r'\s*/\*([0-9a-f]{4,})\*/\s+(.*?);',l)
    if m: ins.append((int(m.group(1),16),m.group(2).strip()))
q=[i for i,(a,t) in enumerate(ins) if 'QGMMA' in t]
q0=q[0]
# find backward branches after QGMMA targeting before it
for i in range(q0,len(ins)):
    a,t=ins[i]
    m=re.search(r'BRA (?:\S+, )?0x([0-9a-f]+)',t)
    if m:
        tgt=int(m.group(1),16)
        if tgt<ins[q0][0] and tgt > ins[q0][0]-0x1000:
            j=[k for k,(aa,_) in enumerate(ins) if aa==tgt][0]
            body=ins[j:i+1]
            ops=collections.Counter((x.split()[1] if x.startswith('@') else x.split()[0]).split('.')[0] for _,x in body)
            print("loop %x..%x: %d instrs"%(tgt,a,len(body)), dict(ops.most_common()))
            if len(sys.argv)>2:
                for aa,x in body:
                    if not re.match(r'(@\S+\s+)?(FMNMX|FFMA)',x): print("  %x %s"%(aa,x))
