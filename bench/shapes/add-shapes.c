// SPDX-License-Identifier: MIT
// Add-sequence experiment: bare rseq adds vs checked adds, several instruction shapes.
// From the team's experiment harness (shared/experiments/add-shapes.c), with: shape G (CPU number loaded before, compared
// inside, slot indexed inside); per thread CPU time beside the wall clock (the main thread
// sleeps instead of spinning, so 2 workers on 2 CPUs have them); output "wall cpu" Mops/s.
// shapes H and I (B and C with the slot addressed through one register, cpu0 + offset, as
// 0.5's sequences). Build: gcc -O2 -pthread add-shapes.c; run: ./a.out V THREADS SECONDS
// (V: 0-8 = A-I).
#define _GNU_SOURCE
#include <sched.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/rseq.h>
#include <time.h>
#include <stdatomic.h>
#include <pthread.h>

#define STRIDE 4096
static char *base;          /* CPU n's slot at base + n*STRIDE: {value, mark} */
static int64_t thr = 1 << 20;

static inline struct rseq *rs(void) { return (struct rseq *)((char *)__builtin_thread_pointer() + __rseq_offset); }

#define CS_BEGIN \
  ".pushsection __rseq_cs, \"aw\"\n\t.balign 32\n\t3:\n\t.long 0x0, 0x0\n\t.quad 1f, (2f - 1f), 4f\n\t.popsection\n\t"
#define CS_END \
  "2:\n\t.pushsection __rseq_failure, \"ax\"\n\t.byte 0x0f, 0xb9, 0x3d\n\t.long 0x53053053\n\t4:\n\tjmp %l[abort]\n\t.popsection\n\t"

/* A: librseq idiom: cpu loaded outside, compared inside, address computed outside */
static inline void add_A(int64_t a) {
  struct rseq *r = rs();
again:;
  int cpu = __atomic_load_n(&r->cpu_id, __ATOMIC_RELAXED);
  int64_t *v = (int64_t *)(base + (size_t)cpu * STRIDE);
  __asm__ __volatile__ goto(CS_BEGIN
    "leaq 3b(%%rip), %%rax\n\tmovq %%rax, 8(%[r])\n\t1:\n\t"
    "cmpl %[cpu], 4(%[r])\n\tjnz 4f\n\t"
    "addq %[a], %[v]\n\t" CS_END
    : : [r] "r"(r), [cpu] "r"(cpu), [v] "m"(*v), [a] "er"(a) : "memory", "cc", "rax" : abort);
  return;
abort: goto again;
}
/* B: library shape: cpu loaded inside, sign test, shift, add */
static inline void add_B(int64_t a) {
  long off;
  char *r = (char *)rs();
again:
  __asm__ __volatile__ goto(CS_BEGIN
    "leaq 3b(%%rip), %[off]\n\tmovq %[off], 8(%[r])\n\t1:\n\t"
    "movslq 4(%[r]), %[off]\n\ttestq %[off], %[off]\n\tjs 4f\n\tshlq $12, %[off]\n\t"
    "addq %[a], (%[b], %[off])\n\t" CS_END
    : [off] "=&r"(off) : [r] "r"(r), [b] "r"(base), [a] "er"(a) : "memory", "cc" : abort);
  return;
abort: goto again;
}
/* C: library checked shape (inside load, check before add) */
static inline void add_C(int64_t a) {
  long off, d;
  char *r = (char *)rs();
again:
  __asm__ __volatile__ goto(CS_BEGIN
    "leaq 3b(%%rip), %[off]\n\tmovq %[off], 8(%[r])\n\t1:\n\t"
    "movslq 4(%[r]), %[off]\n\ttestq %[off], %[off]\n\tjs 4f\n\tshlq $12, %[off]\n\t"
    "movq (%[b], %[off]), %[d]\n\tsubq 8(%[b], %[off]), %[d]\n\taddq %[bias], %[d]\n\tcmpq %[w], %[d]\n\tja %l[over]\n\t"
    "addq %[a], (%[b], %[off])\n\t" CS_END
    : [off] "=&r"(off), [d] "=&r"(d) : [r] "r"(r), [b] "r"(base), [a] "er"(a), [bias] "r"(a + thr), [w] "r"(2 * thr) : "memory", "cc" : abort, over);
  return;
abort: goto again;
over: { int64_t *vv = (int64_t *)(base + (size_t)__atomic_load_n(&rs()->cpu_id, __ATOMIC_RELAXED) * STRIDE); __atomic_store_n(&vv[1], __atomic_load_n(&vv[0], __ATOMIC_RELAXED), __ATOMIC_RELAXED); goto again; }
}
/* D: checked, librseq idiom (cpu outside; check then add inside) */
static inline void add_D(int64_t a) {
  struct rseq *r = rs();
  long d;
again:;
  int cpu = __atomic_load_n(&r->cpu_id, __ATOMIC_RELAXED);
  int64_t *v = (int64_t *)(base + (size_t)cpu * STRIDE);
  __asm__ __volatile__ goto(CS_BEGIN
    "leaq 3b(%%rip), %%rax\n\tmovq %%rax, 8(%[r])\n\t1:\n\t"
    "cmpl %[cpu], 4(%[r])\n\tjnz 4f\n\t"
    "movq (%[v]), %[d]\n\tsubq 8(%[v]), %[d]\n\taddq %[bias], %[d]\n\tcmpq %[w], %[d]\n\tja %l[over]\n\t"
    "addq %[a], (%[v])\n\t" CS_END
    : [d] "=&r"(d) : [r] "r"(r), [cpu] "r"(cpu), [v] "r"(v), [a] "er"(a), [bias] "r"(a + thr), [w] "r"(2 * thr) : "memory", "cc", "rax" : abort, over);
  return;
abort: goto again;
over: { int64_t *vv = (int64_t *)(base + (size_t)__atomic_load_n(&rs()->cpu_id, __ATOMIC_RELAXED) * STRIDE); __atomic_store_n(&vv[1], __atomic_load_n(&vv[0], __ATOMIC_RELAXED), __ATOMIC_RELAXED); goto again; }
}
/* E: add first inside (librseq idiom), check after commit outside the sequence */
static inline void add_E(int64_t a) {
  struct rseq *r = rs();
again:;
  int cpu = __atomic_load_n(&r->cpu_id, __ATOMIC_RELAXED);
  int64_t *v = (int64_t *)(base + (size_t)cpu * STRIDE);
  __asm__ __volatile__ goto(CS_BEGIN
    "leaq 3b(%%rip), %%rax\n\tmovq %%rax, 8(%[r])\n\t1:\n\t"
    "cmpl %[cpu], 4(%[r])\n\tjnz 4f\n\t"
    "addq %[a], (%[v])\n\t" CS_END
    : : [r] "r"(r), [cpu] "r"(cpu), [v] "r"(v), [a] "er"(a) : "memory", "cc", "rax" : abort);
  if (__builtin_expect((uint64_t)(__atomic_load_n(&v[0], __ATOMIC_RELAXED) - __atomic_load_n(&v[1], __ATOMIC_RELAXED) + thr) > (uint64_t)(2 * thr), 0)) __atomic_store_n(&v[1], __atomic_load_n(&v[0], __ATOMIC_RELAXED), __ATOMIC_RELAXED);
  return;
abort: goto again;
}
/* F: checked in registers, committed by a plain store (mov), librseq idiom */
static inline void add_F(int64_t a) {
  struct rseq *r = rs();
  long n, d;
again:;
  int cpu = __atomic_load_n(&r->cpu_id, __ATOMIC_RELAXED);
  int64_t *v = (int64_t *)(base + (size_t)cpu * STRIDE);
  __asm__ __volatile__ goto(CS_BEGIN
    "leaq 3b(%%rip), %%rax\n\tmovq %%rax, 8(%[r])\n\t1:\n\t"
    "cmpl %[cpu], 4(%[r])\n\tjnz 4f\n\t"
    "movq (%[v]), %[n]\n\taddq %[a], %[n]\n\tmovq %[n], %[d]\n\tsubq 8(%[v]), %[d]\n\taddq %[t], %[d]\n\tcmpq %[w], %[d]\n\tja %l[over]\n\t"
    "movq %[n], (%[v])\n\t" CS_END
    : [n] "=&r"(n), [d] "=&r"(d) : [r] "r"(r), [cpu] "r"(cpu), [v] "r"(v), [a] "er"(a), [t] "r"(thr), [w] "r"(2 * thr) : "memory", "cc", "rax" : abort, over);
  return;
abort: goto again;
over: { int64_t *vv = (int64_t *)(base + (size_t)__atomic_load_n(&rs()->cpu_id, __ATOMIC_RELAXED) * STRIDE); __atomic_store_n(&vv[1], __atomic_load_n(&vv[0], __ATOMIC_RELAXED), __ATOMIC_RELAXED); goto again; }
}

/* G: cpu loaded outside and compared inside; slot indexed inside by shift (library checked shape otherwise) */
static inline void add_G(int64_t a) {
  struct rseq *r = rs();
  long off, d;
again:;
  int cpu = __atomic_load_n(&r->cpu_id, __ATOMIC_RELAXED);
  __asm__ __volatile__ goto(CS_BEGIN
    "leaq 3b(%%rip), %[off]\n\tmovq %[off], 8(%[r])\n\t1:\n\t"
    "cmpl %[cpu], 4(%[r])\n\tjnz 4f\n\tmovslq %[cpu], %[off]\n\tshlq $12, %[off]\n\t"
    "movq (%[b], %[off]), %[d]\n\tsubq 8(%[b], %[off]), %[d]\n\taddq %[bias], %[d]\n\tcmpq %[w], %[d]\n\tja %l[over]\n\t"
    "addq %[a], (%[b], %[off])\n\t" CS_END
    : [off] "=&r"(off), [d] "=&r"(d) : [r] "r"(r), [cpu] "r"(cpu), [b] "r"(base), [a] "er"(a), [bias] "r"(a + thr), [w] "r"(2 * thr) : "memory", "cc" : abort, over);
  return;
abort: goto again;
over: { int64_t *vv = (int64_t *)(base + (size_t)__atomic_load_n(&rs()->cpu_id, __ATOMIC_RELAXED) * STRIDE); __atomic_store_n(&vv[1], __atomic_load_n(&vv[0], __ATOMIC_RELAXED), __ATOMIC_RELAXED); goto again; }
}

/* H: B (the library bare shape) with the slot's address in one register (shift, add base) */
static inline void add_H(int64_t a) {
  long off; char *r = (char *)rs();
again:
  __asm__ __volatile__ goto(CS_BEGIN
    "leaq 3b(%%rip), %[off]\n\tmovq %[off], 8(%[r])\n\t1:\n\t"
    "movslq 4(%[r]), %[off]\n\ttestq %[off], %[off]\n\tjs 4f\n\tshlq $12, %[off]\n\taddq %[b], %[off]\n\t"
    "addq %[a], (%[off])\n\t" CS_END
    : [off] "=&r"(off) : [r] "r"(r), [b] "r"(base), [a] "er"(a) : "memory", "cc" : abort);
  return;
abort: goto again;
}
/* I: C (the library checked shape; 0.5's) with the slot's address in one register */
static inline void add_I(int64_t a) {
  long off, d; char *r = (char *)rs();
again:
  __asm__ __volatile__ goto(CS_BEGIN
    "leaq 3b(%%rip), %[off]\n\tmovq %[off], 8(%[r])\n\t1:\n\t"
    "movslq 4(%[r]), %[off]\n\ttestq %[off], %[off]\n\tjs 4f\n\tshlq $12, %[off]\n\taddq %[b], %[off]\n\t"
    "movq (%[off]), %[d]\n\tsubq 8(%[off]), %[d]\n\taddq %[bias], %[d]\n\tcmpq %[w], %[d]\n\tja %l[over]\n\t"
    "addq %[a], (%[off])\n\t" CS_END
    : [off] "=&r"(off), [d] "=&r"(d) : [r] "r"(r), [b] "r"(base), [a] "er"(a), [bias] "r"(a + thr), [w] "r"(2 * thr) : "memory", "cc" : abort, over);
  return;
abort: goto again;
over: { int64_t *vv = (int64_t *)(base + (size_t)__atomic_load_n(&rs()->cpu_id, __ATOMIC_RELAXED) * STRIDE); __atomic_store_n(&vv[1], __atomic_load_n(&vv[0], __ATOMIC_RELAXED), __ATOMIC_RELAXED); goto again; }
}
static atomic_int go, stop;
static int variant;
static uint64_t res[64];
static double cpus[64];
static double now(void) { struct timespec t; clock_gettime(CLOCK_MONOTONIC, &t); return t.tv_sec + t.tv_nsec * 1e-9; }
#define LOOP(F) while (!atomic_load_explicit(&stop, memory_order_relaxed)) { for (int i = 0; i < 1024; i++) F(1); ops += 1024; }
static void *w(void *arg) {
  long id = (long)arg; uint64_t ops = 0;
  while (!atomic_load(&go));
  switch (variant) { case 0: LOOP(add_A) break; case 1: LOOP(add_B) break; case 2: LOOP(add_C) break;
    case 3: LOOP(add_D) break; case 4: LOOP(add_E) break; case 5: LOOP(add_F) break;
    case 6: LOOP(add_G) break; case 7: LOOP(add_H) break; case 8: LOOP(add_I) break; }
  struct timespec c; clock_gettime(CLOCK_THREAD_CPUTIME_ID, &c);
  res[id * 8] = ops; cpus[id * 8] = c.tv_sec + c.tv_nsec * 1e-9; return NULL;
}
int main(int argc, char **argv) {
  variant = atoi(argv[1]); int nt = atoi(argv[2]); double secs = atof(argv[3]);
  if (__rseq_size == 0) { puts("no rseq"); return 1; }
  base = aligned_alloc(4096, 64 * STRIDE + 8192); memset(base, 0, 64 * STRIDE + 8192);
  base += 2048; /* away from the rseq area's page offset */
  pthread_t t[8];
  for (long i = 0; i < nt; i++) pthread_create(&t[i], NULL, w, (void *)i);
  double t0 = now(); atomic_store(&go, 1);
  struct timespec d = { (time_t)secs, (long)((secs - (time_t)secs) * 1e9) };
  nanosleep(&d, NULL); atomic_store(&stop, 1);
  uint64_t s = 0; double ct = 0;
  for (int i = 0; i < nt; i++) { pthread_join(t[i], NULL); s += res[i * 8]; ct += cpus[i * 8]; }
  /* wall clock; and per CPU time, times the threads: each thread with a CPU to itself */
  printf("%.1f %.1f\n", s / (now() - t0) / 1e6, s / ct * nt / 1e6);
  return 0;
}
