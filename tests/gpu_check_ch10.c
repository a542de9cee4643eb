/* gpu_check_ch10.c — chapter 10's kernels on a CUDA device, against the
   float64 reference; prints ok / not ok lines. Tangled from chapters/app_gpu_run.nw. */
#include <math.h>
#include <stdio.h>
#include "harness/harness.h"
#include "cpu/attention.h"
#include "gpu/gpu_attention.h"
static int check_on_device(size_t heads, size_t nq, size_t nk, size_t d, bool causal,
                           float scale_factor)
{
    attn_params p = attn_default(1, heads, nq, nk, d);
    const size_t count = heads * nq * d, kv = heads * nk * d;
    float *q = fa_alloc(count * 4), *k = fa_alloc(kv * 4), *v = fa_alloc(kv * 4),
          *o = fa_alloc(count * 4);
    double *exact = fa_alloc(count * sizeof(double)), error[2];
    char why[256] = "";
    p.causal = causal;
    p.scale *= scale_factor;
    attn_draw_inputs(&p, (uint32_t)(nq * 31 + d), q, k, v);
    attention_reference(&p, q, k, v, exact);
    for (int kernel = 0; kernel < 2; kernel++) {
        const int status = gpu_attention_cuda(kernel ? GPU_FUSED : GPU_NAIVE, &p, q, k, v, o,
                                              0, NULL, why);
        error[kernel] = status ? INFINITY : max_abs_diff_fd(o, exact, count);
    }
    gpu_attention_emulated(GPU_NAIVE, &p, q, k, v, o, NULL);      /* the yardstick */
    const double bound = gpu_fused_error_bound(&p, q, k, v, exact, max_abs_diff_fd(o, exact, count));
    const bool naive_ok = isfinite(error[0]) && (scale_factor != 1.0f || error[0] <= 1e-5);
    const bool fused_ok = error[1] <= bound && (scale_factor != 1.0f || error[1] <= 1e-5);
    const int failed = !naive_ok + !fused_ok;
    printf("%s - heads=%zu nq=%zu nk=%zu d=%zu causal=%d scale x%g: naive %.3e, fused %.3e "
           "(bound %.3e)%s%s\n", failed ? "not ok" : "ok", heads, nq, nk, d, causal,
           (double)scale_factor, error[0], error[1], bound, *why ? ": " : "", why);
    fa_free(q); fa_free(k); fa_free(v); fa_free(o); fa_free(exact);
    return failed;
}

static int check_mma_on_device(void)
{
    float a[256], b[128], c[128], device[128], emulated[128];
    char why[256] = "";
    int wrong = 0;
    gpu_mma_test_inputs(a, b, c);
    gpu_mma_emulated(a, b, c, emulated);
    if (gpu_mma_cuda(a, b, c, device, why) != 0) wrong = 128;
    for (int i = 0; i < 128 && !wrong; i++) wrong += device[i] != emulated[i];
    printf("%s - mma.sync m16n8k16 bf16: the device and the emulation differ in %d of 128 "
           "elements%s%s\n", wrong ? "not ok" : "ok", wrong, *why ? ": " : "", why);
    return wrong != 0;
}

static int check_ldmatrix_on_device(void)
{
    unsigned short m[256];
    unsigned out[256];
    char why[256] = "";
    gpu_ldmatrix_test_input(m);
    const int exact = gpu_ldmatrix_cuda(m, out, why) == 0 ? gpu_ldmatrix_exact_count(m, out) : 0;
    printf("%s - ldmatrix.x4 and .x4.trans: %d of 256 registers as documented%s%s\n",
           exact == 256 ? "ok" : "not ok", exact, *why ? ": " : "", why);
    return exact != 256;
}

static int check_tc_on_device(size_t heads, size_t nq, size_t nk, size_t d, bool causal)
{
    attn_params p = attn_default(1, heads, nq, nk, d);
    const size_t count = heads * nq * d, kv = heads * nk * d;
    float *q = fa_alloc(count * 4), *k = fa_alloc(kv * 4), *v = fa_alloc(kv * 4),
          *o = fa_alloc(count * 4);
    double *exact = fa_alloc(count * sizeof(double));
    char why[256] = "";
    p.causal = causal;
    attn_draw_inputs(&p, (uint32_t)(nq * 31 + d), q, k, v);
    attention_reference(&p, q, k, v, exact);
    const int status = gpu_attention_cuda(GPU_TC, &p, q, k, v, o, 0, NULL, why);
    const double error = status ? INFINITY : max_abs_diff_fd(o, exact, count);
    const double plain = gpu_bf16_naive_error(&p, q, k, v, exact);
    const int failed = !(error <= 2 * plain);
    printf("%s - tc heads=%zu nq=%zu nk=%zu d=%zu causal=%d: %.3e (plain bf16 %.3e)%s%s\n",
           failed ? "not ok" : "ok", heads, nq, nk, d, causal, error, plain,
           *why ? ": " : "", why);
    fa_free(q); fa_free(k); fa_free(v); fa_free(o); fa_free(exact);
    return failed;
}

static void draw_backward_problem(const attn_params *p, float *x[8], double *exact[3])
{
    const size_t heads = p->batch * p->heads, qo = heads * p->nq * p->d,
                 kv = heads * p->nk * p->d, count[3] = { qo, kv, kv };
    for (int t = 0; t < 8; t++) x[t] = fa_alloc((t == 1 || t == 2 || t >= 6 ? kv : qo) * 4);
    for (int g = 0; g < 3; g++) exact[g] = fa_alloc(count[g] * sizeof(double));
    const uint32_t seed = (uint32_t)(p->nq * 7 + p->d);
    attn_draw_inputs(p, seed, x[0], x[1], x[2]);
    mt19937 gen;
    mt_seed(&gen, seed + 1);
    torch_randn(&gen, x[3], qo);
}

static void free_backward_problem(float *x[8], double *exact[3])
{
    for (int t = 0; t < 8; t++) fa_free(x[t]);
    for (int g = 0; g < 3; g++) fa_free(exact[g]);
}

static int check_backward_on_device(size_t heads, size_t nq, size_t nk, size_t d, bool causal)
{
    attn_params p = attn_default(1, heads, nq, nk, d);
    const size_t qo = heads * nq * d, kv = heads * nk * d, count[3] = { qo, kv, kv };
    float *x[8];
    double *exact[3], naive[3], flash[3], bound[3], error[3];
    char why[256] = "";
    int failed = 0;
    p.causal = causal;
    draw_backward_problem(&p, x, exact);
    gpu_backward_reference(&p, x[0], x[1], x[2], x[3], exact, naive, flash, bound);
    const int status = gpu_backward_cuda(&p, x[0], x[1], x[2], x[3], x[4], x[5], x[6], x[7],
                                         0, NULL, why);
    for (int g = 0; g < 3; g++) {
        error[g] = status ? INFINITY : max_abs_diff_fd(x[5 + g], exact[g], count[g]);
        failed += !(error[g] <= bound[g] && error[g] <= 1e-5);
    }
    printf("%s - backward heads=%zu nq=%zu nk=%zu d=%zu causal=%d: dQ %.3e (bound %.3e), "
           "dK %.3e (%.3e), dV %.3e (%.3e)%s%s\n", failed ? "not ok" : "ok", heads, nq, nk, d,
           causal, error[0], bound[0], error[1], bound[1], error[2], bound[2],
           *why ? ": " : "", why);
    free_backward_problem(x, exact);
    return failed != 0;
}

static int check_tc_backward_on_device(size_t heads, size_t nq, size_t nk, size_t d,
                                       bool causal)
{
    attn_params p = attn_default(1, heads, nq, nk, d);
    const size_t qo = heads * nq * d, kv = heads * nk * d, count[3] = { qo, kv, kv };
    float *x[8];
    double *exact[3], naive[3], flash[3], bound[3], error[3], plain[3];
    char why[256] = "";
    int failed = 0;
    p.causal = causal;
    draw_backward_problem(&p, x, exact);
    gpu_backward_reference(&p, x[0], x[1], x[2], x[3], exact, naive, flash, bound);
    gpu_bf16_naive_backward_error(&p, x[0], x[1], x[2], x[3], exact, plain);
    const int status = gpu_backward_tc_cuda(&p, x[0], x[1], x[2], x[3], x[4], x[5], x[6],
                                            x[7], 0, NULL, why);
    for (int g = 0; g < 3; g++) {
        error[g] = status ? INFINITY : max_abs_diff_fd(x[5 + g], exact[g], count[g]);
        failed += !(error[g] <= 2 * plain[g]);
    }
    printf("%s - tensor-core backward heads=%zu nq=%zu nk=%zu d=%zu causal=%d: dQ %.3e "
           "(plain bf16 %.3e), dK %.3e (%.3e), dV %.3e (%.3e)%s%s\n", failed ? "not ok" : "ok",
           heads, nq, nk, d, causal, error[0], plain[0], error[1], plain[1], error[2], plain[2],
           *why ? ": " : "", why);
    free_backward_problem(x, exact);
    return failed != 0;
}

static int check_backward_cases(void)
{
    int failed = 0;
    for (int causal = 0; causal < 2; causal++) {
        failed += check_backward_on_device(1, 37, 45, 16, causal);
        failed += check_backward_on_device(2, 21, 70, 8, causal);
        failed += check_backward_on_device(1, 9, 40, 128, causal);
        failed += check_backward_on_device(1, 100, 100, 16, causal);
        failed += check_tc_backward_on_device(2, 70, 80, 16, causal);
        failed += check_tc_backward_on_device(1, 9, 70, 64, causal);
        failed += check_tc_backward_on_device(1, 9, 70, 128, causal);
    }
    return failed;
}

int main(void)
{
    static const size_t lengths[] = { 1, 7, 33, 65, 1000 }, dims[] = { 1, 3, 16, 64, 128 };
    char text[256];
    int failed = 0;
    if (!gpu_cuda_device(text)) { printf("# skipped: %s\n", text); return 0; }
    printf("# on %s\n", text);
    for (int a = 0; a < 5; a++)
        for (int b = 0; b < 5; b++)
            for (int causal = 0; causal < 2; causal++) {
                failed += check_on_device(2, lengths[a], lengths[a], dims[b], causal, 1.0f);
                failed += check_on_device(2, lengths[a], 50, dims[b], causal, 1.0f);
            }
    static const size_t tc_dims[] = { 40, 64, 128 };
    for (int a = 0; a < 5; a++)
        for (int b = 0; b < 3; b++)
            for (int causal = 0; causal < 2; causal++) {
                failed += check_tc_on_device(2, lengths[a], lengths[a], tc_dims[b], causal);
                failed += check_tc_on_device(2, lengths[a], 50, tc_dims[b], causal);
            }
    failed += check_tc_on_device(4, 2048, 2048, 128, true);
    failed += check_tc_on_device(4, 2048, 1000, 64, false);
    failed += check_on_device(8, 2048, 2048, 128, true, 1.0f);
    failed += check_on_device(1, 40, 40, 16, false, 1000.0f);
    failed += check_mma_on_device();
    failed += check_ldmatrix_on_device();
    failed += check_backward_cases();
    printf("# %d check(s) failed\n", failed);
    return failed ? 1 : 0;
}
