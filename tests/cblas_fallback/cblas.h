/* cblas.h — the two BLAS routines the book calls, for a machine without
   OpenBLAS (the GPU machine). Tangled from chapters/app_gpu_run.nw. */
#ifndef CBLAS_FALLBACK_H
#define CBLAS_FALLBACK_H
enum CBLAS_ORDER { CblasRowMajor = 101, CblasColMajor = 102 };
enum CBLAS_TRANSPOSE { CblasNoTrans = 111, CblasTrans = 112 };
/* C = alpha op(A) op(B) + beta C, row-major only */
void cblas_sgemm(enum CBLAS_ORDER order, enum CBLAS_TRANSPOSE trans_a,
                 enum CBLAS_TRANSPOSE trans_b, int m, int n, int k, float alpha,
                 const float *a, int lda, const float *b, int ldb, float beta, float *c,
                 int ldc);
float cblas_sdot(int n, const float *x, int incx, const float *y, int incy);
void openblas_set_num_threads(int threads);   /* OpenBLAS's own; one thread here */
#endif
