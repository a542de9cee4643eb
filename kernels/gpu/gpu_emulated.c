/* gpu_emulated.c — chapter 10's kernels on the CPU, through gpu_emu.c.
   Tangled from chapters/app_gpu_emulation.nw. */
#include <stdio.h>
#include <stdlib.h>
#include "harness/harness.h"
#include "gpu/gpu_kernels.cuh"
#include "cpu/backward.h"
static void gpu_tc_emulated(gpu_args a, emu_counts *c);
const char *gpu_params_problem(const attn_params *p)
{
    const char *problem = attn_params_problem(p);
    if (problem) return problem;
    if (p->window > 0) return "the GPU kernels have no sliding window";
    if (p->d > GPU_MAX_DIM) return "the GPU kernels take a head dimension of at most 128";
    if (p->nq > 1u << 30 || p->nk > 1u << 30) return "sequences longer than 2^30";
    if (p->batch * p->heads > 65535) return "more than 65535 batch x heads";
    return NULL;
}

const char *gpu_kernel_problem(gpu_kernel kernel, const attn_params *p)
{
    const char *problem = gpu_params_problem(p);
    if (problem || kernel != GPU_TC) return problem;
    if (p->d % GPU_TC_CHUNK != 0)
        return "the tensor-core kernel takes a head dimension that is a multiple of 8";
    return NULL;
}

static void run_scores(const void *a) { gpu_naive_scores(*(const gpu_args *)a); }
static void run_softmax(const void *a) { gpu_naive_softmax(*(const gpu_args *)a); }
static void run_output(const void *a) { gpu_naive_output(*(const gpu_args *)a); }
static void run_fused(const void *a) { gpu_fused_forward(*(const gpu_args *)a); }

static void launch_on_emulation(gpu_shape s, emu_kernel_fn *kernel, const gpu_args *a,
                                emu_counts *counts)
{
    emu_launch((emu_dim3){ s.x, s.y, 1 }, (emu_dim3){ s.threads, 1, 1 }, kernel, a, counts);
}

void gpu_attention_emulated(gpu_kernel kernel, const attn_params *p, const float *q,
                            const float *k, const float *v, float *o, emu_counts *counts)
{
    const char *problem = gpu_kernel_problem(kernel, p);
    if (problem) { fprintf(stderr, "gpu: error: %s\n", problem); exit(2); }
    gpu_args a = gpu_args_for(p, q, k, v, o);
    emu_counts c = { 0 };
    if (kernel == GPU_FUSED) launch_on_emulation(gpu_fused_shape(a), run_fused, &a, &c);
    else if (kernel == GPU_TC) gpu_tc_emulated(a, &c);
    else {
        a.s = fa_alloc(fa_mul(fa_mul(a.heads, a.nq), fa_mul(a.nk, sizeof(float))));
        launch_on_emulation(gpu_scores_shape(a), run_scores, &a, &c);
        launch_on_emulation(gpu_softmax_shape(a), run_softmax, &a, &c);
        launch_on_emulation(gpu_output_shape(a), run_output, &a, &c);
        fa_free(a.s);
    }
    if (counts) *counts = c;
}

static void run_mma_check(const void *m) { gpu_mma_check(*(const gpu_mma_args *)m); }

void gpu_mma_emulated(const float *a, const float *b, const float *c, float *d)
{
    const gpu_mma_args m = { a, b, c, d };
    emu_launch((emu_dim3){ 1, 1, 1 }, (emu_dim3){ GPU_WARP, 1, 1 }, run_mma_check, &m, NULL);
}

double gpu_tc_ldmatrix_per_warp_tile(const emu_counts *c, unsigned d)
{
    const size_t warp_tiles = c->block_barriers / 2 * GPU_TCF_WARPS(gpu_tc_width(d));
    return warp_tiles ? (double)c->ldmatrix / (double)warp_tiles : 0.0;
}

static void run_ldmatrix_check(const void *x)
{
    gpu_ldmatrix_check(*(const gpu_ldmatrix_args *)x);
}

void gpu_ldmatrix_emulated(const unsigned short m[256], unsigned out[256])
{
    const gpu_ldmatrix_args x = { m, out };
    emu_launch((emu_dim3){ 1, 1, 1 }, (emu_dim3){ GPU_WARP, 1, 1 }, run_ldmatrix_check, &x,
               NULL);
}

void gpu_ldmatrix_test_input(unsigned short m[256])
{
    for (unsigned e = 0; e < 256; e++) m[e] = (unsigned short)(e + 1);
}

int gpu_ldmatrix_exact_count(const unsigned short m[256], const unsigned out[256])
{
    int exact = 0;
    for (unsigned lane = 0; lane < 32; lane++)
        for (unsigned i = 0; i < 4; i++) {
            const unsigned short *x = m + 64 * i;
            const unsigned g = lane / 4, t = lane % 4;
            exact += out[8 * lane + i] == (x[8 * g + 2 * t] | (unsigned)x[8 * g + 2 * t + 1] << 16);
            exact += out[8 * lane + 4 + i] == (x[16 * t + g] | (unsigned)x[16 * t + 8 + g] << 16);
        }
    return exact;
}

static void run_convert(const void *a) { gpu_convert_bf16(*(const gpu_args *)a); }
static void run_tc_64(const void *a) { gpu_tc_forward_64(*(const gpu_args *)a); }
static void run_tc_128(const void *a) { gpu_tc_forward_128(*(const gpu_args *)a); }

static void gpu_tc_emulated(gpu_args a, emu_counts *c)
{
    const size_t qn = (size_t)a.heads * a.nq * a.d, kn = (size_t)a.heads * a.nk * a.d;
    unsigned short *bf16 = fa_alloc(fa_mul(qn + 2 * kn, sizeof(unsigned short)));
    a.q16 = bf16; a.k16 = bf16 + qn; a.v16 = bf16 + qn + kn;
    launch_on_emulation(gpu_convert_shape(a), run_convert, &a, c);
    launch_on_emulation(gpu_tc_shape(a), gpu_tc_width(a.d) == 64 ? run_tc_64 : run_tc_128,
                        &a, c);
    fa_free(bf16);
}

static void run_bwd_dsum(const void *a) { gpu_bwd_dsum(*(const gpu_bwd_args *)a); }
static void run_bwd_keys(const void *a) { gpu_bwd_keys(*(const gpu_bwd_args *)a); }

static void launch_bwd_on_emulation(gpu_shape s, emu_kernel_fn *kernel,
                                    const gpu_bwd_args *a, emu_counts *counts)
{
    emu_launch((emu_dim3){ s.x, s.y, 1 }, (emu_dim3){ s.threads, 1, 1 }, kernel, a, counts);
}

void gpu_backward_emulated(const attn_params *p, const float *q, const float *k,
                           const float *v, const float *dout, float *o, float *dq,
                           float *dk, float *dv, emu_counts counts[GPU_BWD_LAUNCHES])
{
    const char *problem = gpu_params_problem(p);
    if (problem) { fprintf(stderr, "gpu: error: %s\n", problem); exit(2); }
    gpu_args f = gpu_args_for(p, q, k, v, o);
    gpu_bwd_args b = gpu_bwd_sizes(p);
    const size_t rows = (size_t)b.heads * b.nq;
    float *scratch = fa_alloc(fa_mul(rows, 2 * sizeof(float)));
    emu_counts c[GPU_BWD_LAUNCHES] = { { 0 }, { 0 }, { 0 } };
    f.lse = scratch;
    b.q = q; b.k = k; b.v = v; b.o = o; b.dout = dout;
    b.lse = scratch; b.dsum = scratch + rows;
    b.dq = dq; b.dk = dk; b.dv = dv;
    launch_on_emulation(gpu_fused_shape(f), run_fused, &f, &c[0]);
    launch_bwd_on_emulation(gpu_bwd_dsum_shape(b), run_bwd_dsum, &b, &c[1]);
    launch_bwd_on_emulation(gpu_bwd_keys_shape(b), run_bwd_keys, &b, &c[2]);
    fa_free(scratch);
    if (counts) for (int i = 0; i < GPU_BWD_LAUNCHES; i++) counts[i] = c[i];
}

void gpu_mma_test_inputs(float a[256], float b[128], float c[128])
{
    for (int i = 0; i < 256; i++) a[i] = (float)((i * 7) % 11 - 5) / 8;
    for (int i = 0; i < 128; i++) b[i] = (float)((i * 5) % 9 - 4) / 8;
    for (int i = 0; i < 128; i++) c[i] = (float)(i % 13 - 6);
}

int gpu_mma_exact_count(const float *a, const float *b, const float *c, const float *d)
{
    int exact = 0;
    for (int row = 0; row < 16; row++)
        for (int col = 0; col < 8; col++) {
            double sum = c[row * 8 + col];
            for (int k = 0; k < 16; k++) sum += (double)a[row * 16 + k] * b[k * 8 + col];
            exact += d[row * 8 + col] == sum;
        }
    return exact;
}

static void run_tcb_64(const void *a) { gpu_tc_backward_64(*(const gpu_bwd_args *)a); }
static void run_tcb_128(const void *a) { gpu_tc_backward_128(*(const gpu_bwd_args *)a); }

void gpu_backward_tc_emulated(const attn_params *p, const float *q, const float *k,
                              const float *v, const float *dout, float *o, float *dq,
                              float *dk, float *dv, emu_counts counts[GPU_TC_BWD_LAUNCHES])
{
    const char *problem = gpu_kernel_problem(GPU_TC, p);
    if (problem) { fprintf(stderr, "gpu: error: %s\n", problem); exit(2); }
    gpu_args f = gpu_args_for(p, q, k, v, o);
    gpu_bwd_args b = gpu_bwd_sizes(p);
    const size_t rows = (size_t)b.heads * b.nq, qn = rows * b.d, kn = (size_t)b.heads * b.nk * b.d;
    float *scratch = fa_alloc(fa_mul(rows, 2 * sizeof(float)));
    unsigned short *bf16 = fa_alloc(fa_mul(2 * qn + 2 * kn, sizeof(unsigned short)));
    emu_counts c[GPU_TC_BWD_LAUNCHES] = { { 0 }, { 0 }, { 0 }, { 0 }, { 0 } };
    f.q16 = bf16; f.k16 = bf16 + qn; f.v16 = f.k16 + kn; f.lse = scratch;
    gpu_args g = f;
    g.q = dout; g.q16 = f.v16 + kn; g.nk = 0;
    f.lse = scratch;
    b.q = q; b.k = k; b.v = v; b.o = o; b.dout = dout;
    b.lse = scratch; b.dsum = scratch + rows;
    b.dq = dq; b.dk = dk; b.dv = dv;
    b.q16 = f.q16; b.k16 = f.k16; b.v16 = f.v16; b.dout16 = g.q16;
    const bool narrow = gpu_tc_width(f.d) == 64;
    launch_on_emulation(gpu_convert_shape(f), run_convert, &f, &c[0]);
    launch_on_emulation(gpu_tc_shape(f), narrow ? run_tc_64 : run_tc_128, &f, &c[1]);
    launch_on_emulation(gpu_convert_shape(g), run_convert, &g, &c[2]);
    launch_bwd_on_emulation(gpu_bwd_dsum_shape(b), run_bwd_dsum, &b, &c[3]);
    launch_bwd_on_emulation(gpu_tcb_shape(b), narrow ? run_tcb_64 : run_tcb_128, &b, &c[4]);
    fa_free(scratch); fa_free(bf16);
    if (counts) for (int i = 0; i < GPU_TC_BWD_LAUNCHES; i++) counts[i] = c[i];
}

double gpu_fused_error_bound(const attn_params *p, const float *q, const float *k,
                             const float *v, const double *exact, double naive_error)
{
    attn_params tiles = *p;
    const size_t count = p->batch * p->heads * p->nq * p->d;
    float *o = fa_alloc(fa_mul(count, sizeof(float)));
    double top = 0.0;
    tiles.block_q = 16;
    tiles.block_k = 32;
    attention_tiled(&tiles, q, k, v, o, NULL);
    const double tiled_error = max_abs_diff_fd(o, exact, count);
    for (size_t i = 0; i < count; i++) top = fmax(top, fabs(exact[i]));
    fa_free(o);
    return 2 * fmax(fmax(naive_error, tiled_error), ldexp(top, -23));
}

static float bf16_rounded(float x)
{
    const uint32_t u = (uint32_t)gpu_bf16_bits(x) << 16;
    memcpy(&x, &u, sizeof x);
    return x;
}

static float *bf16_rounded_copy(const float *x, size_t count)
{
    float *y = fa_alloc(fa_mul(count, sizeof(float)));
    for (size_t i = 0; i < count; i++) y[i] = bf16_rounded(x[i]);
    return y;
}

static double bf16_naive_row_error(const attn_params *p, const float *q, const float *k,
                                   const float *v, const double *exact, size_t i, float *w)
{
    float m = -INFINITY, l = 0.0f, o[GPU_MAX_DIM] = { 0 };
    double worst = 0.0;
    for (size_t j = 0; j < p->nk; j++) {
        float s = 0.0f;
        for (size_t c = 0; c < p->d; c++) s += q[c] * k[j * p->d + c];
        w[j] = p->causal && j > i ? -INFINITY : s * p->scale;
        m = fmaxf(m, w[j]);
    }
    for (size_t j = 0; j < p->nk; j++) l += w[j] = m == -INFINITY ? 0.0f : expf(w[j] - m);
    for (size_t j = 0; j < p->nk; j++) {
        const float pj = bf16_rounded(l > 0 ? w[j] / l : 0.0f);
        for (size_t c = 0; c < p->d; c++) o[c] += pj * v[j * p->d + c];
    }
    for (size_t c = 0; c < p->d; c++) worst = fmax(worst, fabs((double)o[c] - exact[c]));
    return worst;
}

double gpu_bf16_naive_error(const attn_params *p, const float *q, const float *k,
                            const float *v, const double *exact)
{
    const size_t qn = p->batch * p->heads * p->nq * p->d, kn = p->batch * p->heads * p->nk * p->d;
    float *qr = bf16_rounded_copy(q, qn), *kr = bf16_rounded_copy(k, kn),
          *vr = bf16_rounded_copy(v, kn), *w = fa_alloc(fa_mul(p->nk, sizeof(float)));
    double worst = 0.0;
    for (size_t h = 0; h < p->batch * p->heads; h++)
        for (size_t i = 0; i < p->nq; i++)
            worst = fmax(worst, bf16_naive_row_error(p, qr + (h * p->nq + i) * p->d,
                                                     kr + h * p->nk * p->d, vr + h * p->nk * p->d,
                                                     exact + (h * p->nq + i) * p->d, i, w));
    fa_free(qr); fa_free(kr); fa_free(vr); fa_free(w);
    return worst;
}

#define BWD_U 0x1p-24                /* float32's unit roundoff */
#define BWD_EPS (4 * BWD_U)          /* expf, logf: two ulps */
static double gamma_n(double n) { return n * BWD_U / (1 - n * BWD_U); }
typedef struct {
    double *s, *es, *prob, *omega;   /* nk each */
    double *o, *eo;                  /* d each */
    double m, lse, lse_err, dsum, edsum;
} bwd_row_bound;

static void bound_row_forward(const attn_params *p, const float *q, const float *k,
                              const float *v, size_t i, bwd_row_bound *r)
{
    r->m = -INFINITY;
    for (size_t j = 0; j < p->nk; j++) {
        double s = 0.0, size = 0.0;
        for (size_t c = 0; c < p->d; c++) {
            s += (double)q[c] * k[j * p->d + c];
            size += fabs((double)q[c] * k[j * p->d + c]);
        }
        r->s[j] = attn_visible(p, i, j) ? s * p->scale : -INFINITY;
        r->es[j] = gamma_n((double)p->d + 1) * p->scale * size;
        r->m = fmax(r->m, r->s[j]);
    }
    if (r->m == -INFINITY) return;                      /* a row that sees no key */
    double sum = 0.0;
    for (size_t j = 0; j < p->nk; j++) {
        r->prob[j] = exp(r->s[j] - r->m);                 /* 0 for a hidden key */
        sum += r->prob[j];
        r->omega[j] = r->prob[j] == 0.0 ? 0.0
                    : r->es[j] + ((double)p->nk + 2) * (BWD_EPS + 2 * BWD_U) + BWD_U * (r->m - r->s[j]);
    }
    for (size_t j = 0; j < p->nk; j++) r->prob[j] /= sum;
    r->lse = r->m + log(sum);
    r->lse_err = gamma_n((double)p->nk) + BWD_EPS * log(sum) + BWD_U * fabs(r->lse);
    for (size_t j = 0; j < p->nk; j++) r->lse_err += r->prob[j] * r->omega[j];
    for (size_t c = 0; c < p->d; c++) {
        double o = 0.0, size = 0.0, moved = 0.0;
        for (size_t j = 0; j < p->nk; j++) o += r->prob[j] * v[j * p->d + c];
        for (size_t j = 0; j < p->nk; j++) {
            size += r->prob[j] * fabs(v[j * p->d + c]);
            moved += r->prob[j] * r->omega[j] * fabs(v[j * p->d + c] - o);
        }
        r->o[c] = o;
        r->eo[c] = moved + gamma_n((double)p->nk + 1) * size
                 + (gamma_n((double)p->nk) + BWD_U) * fabs(o);
    }
}

static void bound_row_dsum(const attn_params *p, const float *dout, bwd_row_bound *r)
{
    double size = 0.0;
    r->dsum = r->edsum = 0.0;
    for (size_t c = 0; c < p->d; c++) {
        r->dsum += dout[c] * r->o[c];
        size += fabs(dout[c] * r->o[c]);
        r->edsum += fabs(dout[c]) * r->eo[c];
    }
    r->edsum += gamma_n((double)p->d) * size;
}

static double bound_pair(const attn_params *p, const float *dout, const float *v,
                         const bwd_row_bound *r, size_t j, double *ds, double *pi)
{
    double dp = 0.0, size = 0.0;
    for (size_t c = 0; c < p->d; c++) {
        dp += (double)dout[c] * v[j * p->d + c];
        size += fabs((double)dout[c] * v[j * p->d + c]);
    }
    *pi = r->es[j] + r->lse_err + BWD_U * fabs(r->s[j] - r->lse) + BWD_EPS;
    *ds = r->prob[j] * (dp - r->dsum);
    return r->prob[j] * ((*pi + 2 * BWD_U) * fabs(dp - r->dsum)
                         + gamma_n((double)p->d) * size + r->edsum);
}

static void bound_row_gradients(const attn_params *p, const float *q, const float *k,
                                const float *v, const float *dout, const bwd_row_bound *r,
                                double *edq, double *edk, double *edv)
{
    for (size_t j = 0; j < p->nk; j++) {
        if (r->prob[j] == 0.0) continue;
        double ds, pi;
        const double eds = bound_pair(p, dout, v, r, j, &ds, &pi);
        const double tq = eds + gamma_n((double)p->nk + 2) * fabs(ds),
                     tk = eds + gamma_n((double)p->nq + 2) * fabs(ds),
                     tv = r->prob[j] * (pi + gamma_n((double)p->nq + 1));
        for (size_t c = 0; c < p->d; c++) {
            edq[c] += p->scale * tq * fabs(k[j * p->d + c]);
            edk[j * p->d + c] += p->scale * tk * fabs(q[c]);
            edv[j * p->d + c] += tv * fabs(dout[c]);
        }
    }
}

void gpu_backward_bound(const attn_params *p, const float *q, const float *k,
                        const float *v, const float *dout, double bound[3])
{
    const size_t nk = p->nk, d = p->d, heads = p->batch * p->heads;
    bwd_row_bound r;
    double *work = fa_alloc(fa_mul(fa_mul(4, nk) + fa_mul(4, d) + fa_mul(2, fa_mul(nk, d)), 8));
    r.s = work; r.es = r.s + nk; r.prob = r.es + nk; r.omega = r.prob + nk;
    r.o = r.omega + nk; r.eo = r.o + d;
    double *edq = r.eo + d, *edk = edq + d, *edv = edk + nk * d;
    bound[0] = bound[1] = bound[2] = 0.0;
    for (size_t h = 0; h < heads; h++) {
        const float *qh = q + h * p->nq * d, *kh = k + h * nk * d, *vh = v + h * nk * d,
                    *dh = dout + h * p->nq * d;
        for (size_t e = 0; e < nk * d; e++) edk[e] = edv[e] = 0.0;
        for (size_t i = 0; i < p->nq; i++) {
            for (size_t c = 0; c < d; c++) edq[c] = 0.0;
            bound_row_forward(p, qh + i * d, kh, vh, i, &r);
            if (r.m == -INFINITY) continue;
            bound_row_dsum(p, dh + i * d, &r);
            bound_row_gradients(p, qh + i * d, kh, vh, dh + i * d, &r, edq, edk, edv);
            for (size_t c = 0; c < d; c++) bound[0] = fmax(bound[0], edq[c]);
        }
        for (size_t e = 0; e < nk * d; e++) bound[1] = fmax(bound[1], edk[e]);
        for (size_t e = 0; e < nk * d; e++) bound[2] = fmax(bound[2], edv[e]);
    }
    for (int g = 0; g < 3; g++) bound[g] = 1.01 * bound[g] + 0x1p-30;
    fa_free(work);
}

void gpu_backward_reference(const attn_params *p, const float *q, const float *k,
                            const float *v, const float *dout, double *const exact[3],
                            double naive_error[3], double flash_error[3], double bound[3])
{
    const size_t heads = p->batch * p->heads, qo = heads * p->nq * p->d,
                 kv = heads * p->nk * p->d, count[3] = { qo, kv, kv };
    float *o = fa_alloc(fa_mul(qo, 4)), *lse = fa_alloc(fa_mul(heads * p->nq, 4)),
          *probs = fa_alloc(fa_mul(fa_mul(heads, p->nq), fa_mul(p->nk, 4)));
    float *grad[3] = { fa_alloc(fa_mul(qo, 4)), fa_alloc(fa_mul(kv, 4)), fa_alloc(fa_mul(kv, 4)) };
    attention_grad_fd(p, q, k, v, dout, exact[0], exact[1], exact[2]);
    attention_forward_keep_p(p, q, k, v, o, probs, 1, NULL);
    attention_backward_naive(p, q, k, v, probs, dout, grad[0], grad[1], grad[2], 1, NULL);
    for (int g = 0; g < 3; g++) naive_error[g] = max_abs_diff_fd(grad[g], exact[g], count[g]);
    attention_forward_lse(p, q, k, v, o, lse, 1, NULL);
    attention_backward_flash(p, q, k, v, o, lse, dout, grad[0], grad[1], grad[2], 1, NULL);
    gpu_backward_bound(p, q, k, v, dout, bound);
    for (int g = 0; g < 3; g++) {
        double top = 0.0;
        for (size_t i = 0; i < count[g]; i++) top = fmax(top, fabs(exact[g][i]));
        flash_error[g] = max_abs_diff_fd(grad[g], exact[g], count[g]);
        bound[g] += ldexp(top, -30);
    }
    for (int g = 0; g < 3; g++) fa_free(grad[g]);
    fa_free(probs); fa_free(lse); fa_free(o);
}

typedef struct {
    const float *q, *k, *v, *dout, *dout16;   /* one head; q, k, v, dout16 rounded */
    float *dq, *dk, *dv, *w, *ds;             /* gradients; a row's P and dS (nk each) */
} bf16_bwd_head;

static float bf16_naive_row_dsum(const attn_params *p, const bf16_bwd_head *h, size_t i)
{
    float m = -INFINITY, l = 0.0f, o[GPU_MAX_DIM] = { 0 }, dsum = 0.0f;
    for (size_t j = 0; j < p->nk; j++) {
        float s = 0.0f;
        for (size_t c = 0; c < p->d; c++) s += h->q[i * p->d + c] * h->k[j * p->d + c];
        h->w[j] = attn_visible(p, i, j) ? s * p->scale : -INFINITY;
        m = fmaxf(m, h->w[j]);
    }
    for (size_t j = 0; j < p->nk; j++) l += h->w[j] = m == -INFINITY ? 0.0f : expf(h->w[j] - m);
    for (size_t j = 0; j < p->nk; j++) h->w[j] = l > 0 ? h->w[j] / l : 0.0f;
    for (size_t j = 0; j < p->nk; j++)
        for (size_t c = 0; c < p->d; c++) o[c] += bf16_rounded(h->w[j]) * h->v[j * p->d + c];
    for (size_t c = 0; c < p->d; c++) dsum += h->dout[i * p->d + c] * o[c];
    return dsum;
}

static void bf16_naive_row_backward(const attn_params *p, const bf16_bwd_head *h, size_t i)
{
    const float dsum = bf16_naive_row_dsum(p, h, i);
    const float *dout = h->dout16 + i * p->d;
    for (size_t j = 0; j < p->nk; j++) {
        float dp = 0.0f;
        for (size_t c = 0; c < p->d; c++) dp += dout[c] * h->v[j * p->d + c];
        h->ds[j] = bf16_rounded(h->w[j] * (dp - dsum));
    }
    for (size_t j = 0; j < p->nk; j++)
        for (size_t c = 0; c < p->d; c++) {
            h->dq[i * p->d + c] += h->ds[j] * h->k[j * p->d + c];
            h->dk[j * p->d + c] += h->ds[j] * h->q[i * p->d + c];
            h->dv[j * p->d + c] += bf16_rounded(h->w[j]) * dout[c];
        }
    for (size_t c = 0; c < p->d; c++) h->dq[i * p->d + c] *= p->scale;
}

void gpu_bf16_naive_backward_error(const attn_params *p, const float *q, const float *k,
                                   const float *v, const float *dout,
                                   double *const exact[3], double error[3])
{
    const size_t heads = p->batch * p->heads, qn = heads * p->nq * p->d,
                 kn = heads * p->nk * p->d, count[3] = { qn, kn, kn };
    float *r[4] = { bf16_rounded_copy(q, qn), bf16_rounded_copy(k, kn),
                    bf16_rounded_copy(v, kn), bf16_rounded_copy(dout, qn) };
    float *grad[3] = { fa_alloc(fa_mul(qn, 4)), fa_alloc(fa_mul(kn, 4)), fa_alloc(fa_mul(kn, 4)) },
          *work = fa_alloc(fa_mul(2 * p->nk, sizeof(float)));
    memset(grad[0], 0, qn * sizeof(float));
    memset(grad[1], 0, kn * sizeof(float));
    memset(grad[2], 0, kn * sizeof(float));
    for (size_t e = 0; e < heads; e++) {
        const size_t qh = e * p->nq * p->d, kh = e * p->nk * p->d;
        const bf16_bwd_head h = { r[0] + qh, r[1] + kh, r[2] + kh, dout + qh, r[3] + qh,
                                  grad[0] + qh, grad[1] + kh, grad[2] + kh, work, work + p->nk };
        for (size_t i = 0; i < p->nq; i++) bf16_naive_row_backward(p, &h, i);
    }
    for (size_t e = 0; e < kn; e++) grad[1][e] *= p->scale;
    for (int g = 0; g < 3; g++) error[g] = max_abs_diff_fd(grad[g], exact[g], count[g]);
    for (int g = 0; g < 4; g++) fa_free(r[g]);
    for (int g = 0; g < 3; g++) fa_free(grad[g]);
    fa_free(work);
}

unsigned gpu_fused_column_of(unsigned lane, unsigned slice)
{
    return fused_column(lane, slice);
}
