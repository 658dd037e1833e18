"""loop2.py <sass> MARK [v]: loops under 400 instructions holding MARK (e.g. UTMALDG)."""
import re,sys,collections
ins=[]
for l in open(sys.argv[1]):
    m=re.match(r'\s*/\*([0-9a-f]{4,})\*/\s+(.*?);',l)
    if m: ins.append((int(m.group(1),16),m.group(2).strip()))
idx={a:i for i,(a,t) in enumerate(ins)}
mark=sys.argv[2]
for i,(a,t) in enumerate(ins):
    m=re.search(r'BRA (?:\S+, )?0x([0-9a-f]+)',t)
    if m and int(m.group(1),16)<a:
        j=idx[int(m.group(1),16)]
        body=ins[j:i+1]
        if any(mark in x for _,x in body) and len(body)<400:
            ops=collections.Counter((x.split()[1] if x.startswith('@') else x.split()[0]).split('.')[0] for _,x in body)
            print("loop %x..%x: %d"%(ins[j][0],a,len(body)), dict(ops.most_common(12)))
            if len(sys.argv)>3:
                for aa,x in body: print("   %x %s"%(aa,x))
