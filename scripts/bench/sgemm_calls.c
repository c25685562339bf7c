/* LD_PRELOAD shim for scripts/bench/sgemm_calls.sh: wraps cblas_sgemm, times every call and
 * at exit writes one line per distinct call (transposes, m, n, k, beta 0 or not) with its call
 * count, seconds and GFLOP/s to $SGEMM_CALLS_OUT, plus OpenBLAS's kernel name and build config. */
#define _GNU_SOURCE
#include <cblas.h>
#include <dlfcn.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>

typedef void (*sgemm_fn)(enum CBLAS_ORDER, enum CBLAS_TRANSPOSE, enum CBLAS_TRANSPOSE, blasint, blasint, blasint,
                         float, const float *, blasint, const float *, blasint, float, float *, blasint);

struct call_class {
  int trans_a, trans_b, m, n, k, beta_nonzero;
  long calls;
  double seconds;
};

enum { kMaxClasses = 1024 };
static struct call_class classes[kMaxClasses];
static int class_count;
static long dropped;

static double now(void) {
  struct timespec t;
  clock_gettime(CLOCK_MONOTONIC, &t);
  return (double)t.tv_sec + 1e-9 * (double)t.tv_nsec;
}

static void write_report(void) {
  const char *path = getenv("SGEMM_CALLS_OUT");
  FILE *out = path != NULL ? fopen(path, "w") : stderr;
  if (out == NULL) return;
  char *(*corename)(void) = (char *(*)(void))dlsym(RTLD_DEFAULT, "openblas_get_corename");
  char *(*config)(void) = (char *(*)(void))dlsym(RTLD_DEFAULT, "openblas_get_config");
  fprintf(out, "# core %s; config %s; classes not recorded (table full): %ld calls\n",
          corename != NULL ? corename() : "?", config != NULL ? config() : "?", dropped);
  for (int i = 0; i < class_count; ++i) {
    const struct call_class *c = &classes[i];
    fprintf(out, "%c%c %d %d %d %d %ld %.6f %.2f\n", c->trans_a ? 'T' : 'N', c->trans_b ? 'T' : 'N', c->m, c->n,
            c->k, c->beta_nonzero, c->calls, c->seconds,
            2.0 * c->m * c->n * (double)c->k * (double)c->calls / c->seconds / 1e9);
  }
  if (out != stderr) fclose(out);
}

void cblas_sgemm(enum CBLAS_ORDER order, enum CBLAS_TRANSPOSE ta, enum CBLAS_TRANSPOSE tb, blasint m, blasint n,
                 blasint k, float alpha, const float *a, blasint lda, const float *b, blasint ldb, float beta,
                 float *c, blasint ldc) {
  static sgemm_fn real;
  if (real == NULL) {
    real = (sgemm_fn)dlsym(RTLD_NEXT, "cblas_sgemm");
    atexit(write_report);
  }
  const double start = now();
  real(order, ta, tb, m, n, k, alpha, a, lda, b, ldb, beta, c, ldc);
  const double seconds = now() - start;
  const struct call_class key = {ta == CblasTrans, tb == CblasTrans, m, n, k, beta != 0.0f, 1, seconds};
  for (int i = 0; i < class_count; ++i) {
    struct call_class *e = &classes[i];
    if (e->trans_a == key.trans_a && e->trans_b == key.trans_b && e->m == m && e->n == n && e->k == k &&
        e->beta_nonzero == key.beta_nonzero) {
      e->calls += 1;
      e->seconds += seconds;
      return;
    }
  }
  if (class_count < kMaxClasses) {
    classes[class_count++] = key;
  } else {
    dropped += 1;
  }
}
