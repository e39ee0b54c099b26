// SPDX-License-Identifier: MIT
// Fold-walk experiment: 1,024 {value, mark} pairs a 4 KiB stride apart (an arena at 1,024 CPUs),
// refilled before each walk: plain loads of every pair (the kernel port's folding sync reads
// every slot) against one lock cmpxchg16b per pair (percpu's fold of an armed CPU), with and
// without prefetching ahead, and against a walk of plain loads and plain stores of each mark
// (what a fold would cost if folders excluded each other by one lock for the whole walk, so
// that the swap need not be atomic: an untested design, see bench/RESULTS.md). Medians of 15
// walks of thread CPU time.
// Build: gcc -O2 fold-walk.c; run: ./a.out
#define _GNU_SOURCE
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#define N 1024
#define STRIDE 4096
static char *base;
static double cpu(void){struct timespec t;clock_gettime(CLOCK_THREAD_CPUTIME_ID,&t);return t.tv_sec*1e9+t.tv_nsec;}
static inline int cas16(int64_t *p, int64_t *exp, int64_t lo, int64_t hi){unsigned char ok;
 __asm__ __volatile__("lock cmpxchg16b %[m]":[m]"+m"(*(int64_t(*)[2])p),"=@ccz"(ok),"+a"(exp[0]),"+d"(exp[1]):"b"(lo),"c"(hi):"memory");return ok;}
static void refill(void){for(int i=0;i<N;i++){int64_t *s=(int64_t*)(base+(size_t)i*STRIDE);s[0]+=5;}}
static int64_t plain(void){int64_t t=0;for(int i=0;i<N;i++){int64_t *s=(int64_t*)(base+(size_t)i*STRIDE);t+=__atomic_load_n(&s[0],__ATOMIC_RELAXED)-__atomic_load_n(&s[1],__ATOMIC_RELAXED);}return t;}
static int64_t casw(int pf){int64_t t=0;for(int i=0;i<N;i++){int64_t *s=(int64_t*)(base+(size_t)i*STRIDE);
 if(pf&&i+pf<N)__builtin_prefetch(base+(size_t)(i+pf)*STRIDE,1);
 int64_t e[2]={s[0],s[1]};while(!cas16(s,e,e[0],e[0]));t+=0;}return t;}
static int64_t marks(void){int64_t t=0;for(int i=0;i<N;i++){int64_t *s=(int64_t*)(base+(size_t)i*STRIDE);
 int64_t v=__atomic_load_n(&s[0],__ATOMIC_RELAXED);t+=v-__atomic_load_n(&s[1],__ATOMIC_RELAXED);__atomic_store_n(&s[1],v,__ATOMIC_RELAXED);}return t;}
int main(void){base=aligned_alloc(4096,(size_t)N*STRIDE);memset(base,0,(size_t)N*STRIDE);base+=0; 
 double r[5][15];
 for(int k=0;k<15;k++){ for(int m=0;m<5;m++){refill();double a=cpu();volatile int64_t x= m==0?plain():m==4?marks():casw(m==1?0:(m==2?4:16));(void)x;r[m][k]=cpu()-a;}}
 const char*n[]={"plain loads","cas16 per slot","cas16 + prefetch 4 ahead","cas16 + prefetch 16 ahead","plain loads, plain mark store"};
 for(int m=0;m<5;m++){double*v=r[m];for(int i=0;i<15;i++)for(int j=i+1;j<15;j++)if(v[j]<v[i]){double t=v[i];v[i]=v[j];v[j]=t;}printf("%-28s %8.0f ns per walk of %d slots\n",n[m],v[7],N);}
}
