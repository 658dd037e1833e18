#include <stdio.h>
#include <string.h>
#include "indexer_plan.h"
int main(void){ const char *names[]={"shared2","dual2","split4","split4r112w"}; char s[4096];
 for(int v=0;v<4;v++) for(int nn=1;nn<=2;nn++) for(int h=32;h<=64;h*=2) for(int d=32;d<=128;d*=2) for(int c=0;c<2;c++) for(int b=0;b<2;b++){
  qg_pmqa_plan p; const char*why=""; if(qg__pmqa_plan(64,nn,h,d,c,b,132,&p,&why)) {printf("plan fail\n");continue;}
  int id=-1; for(int k=0;k<32;k++){const char*n=qg__pmqa_variant_name(k); if(n&&!strcmp(n,names[v])){id=k;break;}}
  qg__pmqa_plan_variant(&p,id); qg__pmqa_source(s,sizeof s,&p); printf("=== %s %d %d %d %d %d grid %d block %d smem %zu\n%s",names[v],nn,h,d,c,b,p.grid_x,p.block_x,p.smem_bytes,s);}
 qg_pmqa_plan p; const char*why=""; qg__pmqa_plan(64,2,64,128,0,0,132,&p,&why); printf("default %s\n", qg__pmqa_variant_name(p.variant));
}
