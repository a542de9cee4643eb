/* cblas.c — plain loops in place of OpenBLAS, for the GPU machine.
   Tangled from chapters/app_gpu_run.nw. */
#include "cblas.h"
void cblas_sgemm(enum CBLAS_ORDER order, enum CBLAS_TRANSPOSE trans_a,
                 enum CBLAS_TRANSPOSE trans_b, int m, int n, int k, float alpha,
                 const float *a, int lda, const float *b, int ldb, float beta, float *c,
                 int ldc)
{
    (void)order;
    for (int i = 0; i < m; i++)
        for (int j = 0; j < n; j++) {
            float sum = 0.0f;
            for (int p = 0; p < k; p++)
                sum += (trans_a == CblasTrans ? a[p * lda + i] : a[i * lda + p]) *
                       (trans_b == CblasTrans ? b[j * ldb + p] : b[p * ldb + j]);
            c[i * ldc + j] = alpha * sum + (beta == 0.0f ? 0.0f : beta * c[i * ldc + j]);
        }
}

float cblas_sdot(int n, const float *x, int incx, const float *y, int incy)
{
    float sum = 0.0f;
    for (int i = 0; i < n; i++) sum += x[i * incx] * y[i * incy];
    return sum;
}

void openblas_set_num_threads(int threads) { (void)threads; }
