/* gpu_cuda.cu — chapter 10's kernels on a CUDA device.
   Tangled from chapters/app_gpu_emulation.nw. */
#include <cuda_runtime.h>
#include <stdio.h>
extern "C" {
#include "harness/harness.h"
}
#include "gpu/gpu_kernels.cuh"
static int cuda_failed(char why[256], const char *call, cudaError_t e)
{
    snprintf(why, 256, "%s: %s", call, cudaGetErrorString(e));
    return -1;
}
#define CUDA_TRY(call) do { cudaError_t e_ = (call); \
    if (e_ != cudaSuccess) { status = cuda_failed(why, #call, e_); goto done; } } while (0)

static cudaError_t gpu_tc_inputs_on_device(gpu_args *a, unsigned short **bf16)
{
    const size_t qn = (size_t)a->heads * a->nq * a->d, kn = (size_t)a->heads * a->nk * a->d;
    cudaError_t e = cudaMalloc((void **)bf16, (qn + 2 * kn) * sizeof(unsigned short));
    if (e != cudaSuccess) return e;
    a->q16 = *bf16; a->k16 = *bf16 + qn; a->v16 = *bf16 + qn + kn;
    const gpu_shape s = gpu_convert_shape(*a);
    gpu_convert_bf16<<<dim3(s.x, s.y), s.threads>>>(*a);
    return cudaGetLastError();
}

static cudaError_t launch_tc_on_device(gpu_args a)
{
    const gpu_shape s = gpu_tc_shape(a);
    const unsigned width = gpu_tc_width(a.d);
    const size_t bytes = gpu_tc_shared_bytes(width);
    void (*kernel)(gpu_args) = width == 64 ? gpu_tc_forward_64 : gpu_tc_forward_128;
    cudaError_t e = cudaFuncSetAttribute(kernel, cudaFuncAttributeMaxDynamicSharedMemorySize,
                                         (int)bytes);
    if (e != cudaSuccess) return e;
    kernel<<<dim3(s.x, s.y), s.threads, bytes>>>(a);
    return cudaGetLastError();
}

extern "C" bool gpu_cuda_device(char text[256])
{
    int count = 0, driver = 0;
    cudaDeviceProp prop;
    cudaError_t e = cudaGetDeviceCount(&count);
    if (e != cudaSuccess || count == 0) {
        snprintf(text, 256, "no CUDA device (%s)",
                 e != cudaSuccess ? cudaGetErrorString(e) : "none found");
        return false;
    }
    e = cudaGetDeviceProperties(&prop, 0);
    if (e == cudaSuccess) e = cudaDriverGetVersion(&driver);
    if (e != cudaSuccess) {
        snprintf(text, 256, "CUDA device 0 does not answer (%s)", cudaGetErrorString(e));
        return false;
    }
    snprintf(text, 256, "%.120s, sm_%d%d, %d SMs, driver CUDA %d.%d", prop.name,
             prop.major % 100, prop.minor % 10, prop.multiProcessorCount % 10000,
             driver / 1000 % 100, driver % 1000 / 10);
    return true;
}

static cudaError_t launch_on_device(gpu_kernel kernel, gpu_args a)
{
    gpu_shape s;
    if (kernel == GPU_TC) return launch_tc_on_device(a);
    if (kernel == GPU_FUSED) {
        s = gpu_fused_shape(a);
        gpu_fused_forward<<<dim3(s.x, s.y), s.threads>>>(a);
        return cudaGetLastError();
    }
    s = gpu_scores_shape(a);
    gpu_naive_scores<<<dim3(s.x, s.y), s.threads>>>(a);
    s = gpu_softmax_shape(a);
    gpu_naive_softmax<<<dim3(s.x, s.y), s.threads>>>(a);
    s = gpu_output_shape(a);
    gpu_naive_output<<<dim3(s.x, s.y), s.threads>>>(a);
    return cudaGetLastError();
}

static size_t device_bytes(gpu_kernel kernel, gpu_args a)
{
    const size_t qo = (size_t)a.heads * a.nq * a.d, kv = (size_t)a.heads * a.nk * a.d;
    const size_t scores = kernel == GPU_NAIVE ? (size_t)a.heads * a.nq * a.nk : 0;
    const size_t bf16 = kernel == GPU_TC ? (qo + 2 * kv) * sizeof(unsigned short) : 0;
    return (2 * qo + 2 * kv + scores) * sizeof(float) + bf16;
}

static int refuse_memory(size_t need, size_t free_bytes, char why[256])
{
    char a[32], b[32];
    snprintf(why, 256, "needs %s of device memory, %s free", fmt_bytes(a, (double)need),
             fmt_bytes(b, (double)free_bytes));
    return -1;
}

typedef cudaError_t (*device_launch)(const void *work);

static cudaError_t time_runs(device_launch launch, const void *work, int repeats, double *ms)
{
    double *times = (double *)fa_alloc((size_t)repeats * sizeof(double));
    cudaEvent_t start = NULL, stop = NULL;
    cudaError_t e = cudaEventCreate(&start);
    if (e == cudaSuccess) e = cudaEventCreate(&stop);
    for (int r = 0; r < repeats && e == cudaSuccess; r++) {
        float elapsed = 0.0f;
        e = cudaEventRecord(start);
        if (e == cudaSuccess) e = launch(work);
        if (e == cudaSuccess) e = cudaEventRecord(stop);
        if (e == cudaSuccess) e = cudaEventSynchronize(stop);
        if (e == cudaSuccess) e = cudaEventElapsedTime(&elapsed, start, stop);
        times[r] = elapsed;
    }
    if (e == cudaSuccess && ms) *ms = median_of(times, (size_t)repeats);
    if (start) cudaEventDestroy(start);
    if (stop) cudaEventDestroy(stop);
    fa_free(times);
    return e;
}

typedef struct { gpu_kernel kernel; gpu_args a; } forward_work;

static cudaError_t launch_forward(const void *work)
{
    const forward_work *f = (const forward_work *)work;
    return launch_on_device(f->kernel, f->a);
}

extern "C" int gpu_attention_cuda(gpu_kernel kernel, const attn_params *p, const float *q,
                                  const float *k, const float *v, float *o, int repeats,
                                  double *ms, char why[256])
{
    const char *problem = gpu_kernel_problem(kernel, p);
    if (problem) return snprintf(why, 256, "%s", problem), -1;
    gpu_args a = gpu_args_for(p, NULL, NULL, NULL, NULL), host = gpu_args_for(p, q, k, v, o);
    const size_t qo = (size_t)a.heads * a.nq * a.d * sizeof(float),
                 kv = (size_t)a.heads * a.nk * a.d * sizeof(float);
    size_t free_bytes = 0, total_bytes = 0;
    int status = 0;
    float *dq = NULL, *dk = NULL, *dv = NULL, *ds = NULL, *dout = NULL;
    unsigned short *bf16 = NULL;          /* the tensor-core kernel's inputs */
    CUDA_TRY(cudaMemGetInfo(&free_bytes, &total_bytes));
    if (device_bytes(kernel, a) > free_bytes)
        return refuse_memory(device_bytes(kernel, a), free_bytes, why);
    CUDA_TRY(cudaMalloc((void **)&dq, qo));
    CUDA_TRY(cudaMalloc((void **)&dk, kv));
    CUDA_TRY(cudaMalloc((void **)&dv, kv));
    CUDA_TRY(cudaMalloc((void **)&dout, qo));
    if (kernel == GPU_NAIVE)
        CUDA_TRY(cudaMalloc((void **)&ds, (size_t)a.heads * a.nq * a.nk * sizeof(float)));
    CUDA_TRY(cudaMemcpy(dq, host.q, qo, cudaMemcpyHostToDevice));
    CUDA_TRY(cudaMemcpy(dk, host.k, kv, cudaMemcpyHostToDevice));
    CUDA_TRY(cudaMemcpy(dv, host.v, kv, cudaMemcpyHostToDevice));
    a.q = dq; a.k = dk; a.v = dv; a.s = ds; a.o = dout;
    if (kernel == GPU_TC) CUDA_TRY(gpu_tc_inputs_on_device(&a, &bf16));
    CUDA_TRY(cudaMemset(dout, 0xff, qo));
    CUDA_TRY(launch_on_device(kernel, a));
    CUDA_TRY(cudaDeviceSynchronize());
    CUDA_TRY(cudaMemcpy(host.o, dout, qo, cudaMemcpyDeviceToHost));
    if (repeats > 0) {
        const forward_work work = { kernel, a };
        CUDA_TRY(time_runs(launch_forward, &work, repeats, ms));
    }
done:
    cudaFree(dq); cudaFree(dk); cudaFree(dv); cudaFree(ds); cudaFree(dout); cudaFree(bf16);
    return status;
}

extern "C" int gpu_mma_cuda(const float *a, const float *b, const float *c, float *d,
                            char why[256])
{
    float *buf = NULL;
    int status = 0;
    CUDA_TRY(cudaMalloc((void **)&buf, (256 + 3 * 128) * sizeof(float)));
    CUDA_TRY(cudaMemcpy(buf, a, 256 * sizeof(float), cudaMemcpyHostToDevice));
    CUDA_TRY(cudaMemcpy(buf + 256, b, 128 * sizeof(float), cudaMemcpyHostToDevice));
    CUDA_TRY(cudaMemcpy(buf + 384, c, 128 * sizeof(float), cudaMemcpyHostToDevice));
    gpu_mma_check<<<1, GPU_WARP>>>(gpu_mma_args{ buf, buf + 256, buf + 384, buf + 512 });
    CUDA_TRY(cudaGetLastError());
    CUDA_TRY(cudaMemcpy(d, buf + 512, 128 * sizeof(float), cudaMemcpyDeviceToHost));
done:
    cudaFree(buf);
    return status;
}

extern "C" int gpu_ldmatrix_cuda(const unsigned short m[256], unsigned out[256],
                                 char why[256])
{
    unsigned short *buf = NULL;
    int status = 0;
    CUDA_TRY(cudaMalloc((void **)&buf, 256 * sizeof(unsigned short) + 256 * sizeof(unsigned)));
    CUDA_TRY(cudaMemcpy(buf, m, 256 * sizeof(unsigned short), cudaMemcpyHostToDevice));
    gpu_ldmatrix_check<<<1, GPU_WARP>>>(gpu_ldmatrix_args{ buf, (unsigned *)(buf + 256) });
    CUDA_TRY(cudaGetLastError());
    CUDA_TRY(cudaMemcpy(out, buf + 256, 256 * sizeof(unsigned), cudaMemcpyDeviceToHost));
done:
    cudaFree(buf);
    return status;
}

static cudaError_t launch_backward_on_device(gpu_bwd_args b)
{
    gpu_shape s = gpu_bwd_dsum_shape(b);
    gpu_bwd_dsum<<<dim3(s.x, s.y), s.threads>>>(b);
    s = gpu_bwd_keys_shape(b);
    gpu_bwd_keys<<<dim3(s.x, s.y), s.threads>>>(b);
    return cudaGetLastError();
}

static cudaError_t launch_backward(const void *work)
{
    return launch_backward_on_device(*(const gpu_bwd_args *)work);
}

static cudaError_t launch_tc_backward_on_device(gpu_bwd_args b)
{
    gpu_shape s = gpu_bwd_dsum_shape(b);
    gpu_bwd_dsum<<<dim3(s.x, s.y), s.threads>>>(b);
    s = gpu_tcb_shape(b);
    const unsigned width = gpu_tc_width(b.d);
    const size_t bytes = gpu_tcb_shared_bytes(width);
    void (*kernel)(gpu_bwd_args) = width == 64 ? gpu_tc_backward_64 : gpu_tc_backward_128;
    cudaError_t e = cudaFuncSetAttribute(kernel, cudaFuncAttributeMaxDynamicSharedMemorySize,
                                         (int)bytes);
    if (e != cudaSuccess) return e;
    kernel<<<dim3(s.x, s.y), s.threads, bytes>>>(b);
    return cudaGetLastError();
}

static cudaError_t launch_tc_backward(const void *work)
{
    return launch_tc_backward_on_device(*(const gpu_bwd_args *)work);
}

static cudaError_t tc_forward_on_device(gpu_args *f, gpu_bwd_args *b, unsigned short *bf16[2])
{
    cudaError_t e = gpu_tc_inputs_on_device(f, &bf16[0]);
    if (e == cudaSuccess)
        e = cudaMalloc((void **)&bf16[1], (size_t)f->heads * f->nq * f->d * sizeof(unsigned short));
    if (e != cudaSuccess) return e;
    gpu_args g = *f;
    g.q = b->dout; g.q16 = bf16[1]; g.nk = 0;
    const gpu_shape s = gpu_convert_shape(g);
    gpu_convert_bf16<<<dim3(s.x, s.y), s.threads>>>(g);
    b->q16 = f->q16; b->k16 = f->k16; b->v16 = f->v16; b->dout16 = bf16[1];
    return launch_on_device(GPU_TC, *f);
}

static int backward_on_device(bool tc, const attn_params *p, const float *q, const float *k,
                              const float *v, const float *dout, float *o, float *dq,
                              float *dk, float *dv, int repeats, double *ms, char why[256])
{
    const char *problem = tc ? gpu_kernel_problem(GPU_TC, p) : gpu_params_problem(p);
    if (problem) return snprintf(why, 256, "%s", problem), -1;
    enum { BWD_ARRAYS = 10 };
    gpu_args f = gpu_args_for(p, NULL, NULL, NULL, NULL);
    gpu_bwd_args b = gpu_bwd_sizes(p);
    const size_t qo = (size_t)b.heads * b.nq * b.d * sizeof(float),
                 kv = (size_t)b.heads * b.nk * b.d * sizeof(float),
                 rows = (size_t)b.heads * b.nq * sizeof(float),
                 bytes[BWD_ARRAYS] = { qo, kv, kv, qo, qo, qo, kv, kv, rows, rows },
                 need = 4 * qo + 4 * kv + 2 * rows;
    size_t free_bytes = 0, total_bytes = 0;
    int status = 0;
    float *mem[BWD_ARRAYS] = { NULL };
    unsigned short *bf16[2] = { NULL, NULL };   /* the tensor-core chain's Q K V, and dO */
    const size_t all = need + (tc ? qo + kv : 0);  /* those four in bf16: half their floats */
    CUDA_TRY(cudaMemGetInfo(&free_bytes, &total_bytes));
    if (all > free_bytes) return refuse_memory(all, free_bytes, why);
    for (int t = 0; t < BWD_ARRAYS; t++) CUDA_TRY(cudaMalloc((void **)&mem[t], bytes[t]));
    CUDA_TRY(cudaMemcpy(mem[0], q, qo, cudaMemcpyHostToDevice));
    CUDA_TRY(cudaMemcpy(mem[1], k, kv, cudaMemcpyHostToDevice));
    CUDA_TRY(cudaMemcpy(mem[2], v, kv, cudaMemcpyHostToDevice));
    CUDA_TRY(cudaMemcpy(mem[4], dout, qo, cudaMemcpyHostToDevice));
    f.q = b.q = mem[0]; f.k = b.k = mem[1]; f.v = b.v = mem[2]; f.o = mem[3]; b.o = mem[3];
    b.dout = mem[4]; b.dq = mem[5]; b.dk = mem[6]; b.dv = mem[7];
    f.lse = mem[8]; b.lse = mem[8]; b.dsum = mem[9];
    for (int t = 3; t < 8; t++)
        if (t != 4) CUDA_TRY(cudaMemset(mem[t], 0xff, bytes[t]));   /* all but dO */
    if (tc) CUDA_TRY(tc_forward_on_device(&f, &b, bf16));
    else CUDA_TRY(launch_on_device(GPU_FUSED, f));
    CUDA_TRY(tc ? launch_tc_backward_on_device(b) : launch_backward_on_device(b));
    CUDA_TRY(cudaDeviceSynchronize());
    CUDA_TRY(cudaMemcpy(o, mem[3], qo, cudaMemcpyDeviceToHost));
    CUDA_TRY(cudaMemcpy(dq, mem[5], qo, cudaMemcpyDeviceToHost));
    CUDA_TRY(cudaMemcpy(dk, mem[6], kv, cudaMemcpyDeviceToHost));
    CUDA_TRY(cudaMemcpy(dv, mem[7], kv, cudaMemcpyDeviceToHost));
    if (repeats > 0) CUDA_TRY(time_runs(tc ? launch_tc_backward : launch_backward, &b, repeats, ms));
done:
    for (int t = 0; t < BWD_ARRAYS; t++) cudaFree(mem[t]);
    for (int t = 0; t < 2; t++) cudaFree(bf16[t]);
    return status;
}

extern "C" int gpu_backward_cuda(const attn_params *p, const float *q, const float *k,
                                 const float *v, const float *dout, float *o, float *dq,
                                 float *dk, float *dv, int repeats, double *ms,
                                 char why[256])
{
    return backward_on_device(false, p, q, k, v, dout, o, dq, dk, dv, repeats, ms, why);
}

extern "C" int gpu_backward_tc_cuda(const attn_params *p, const float *q, const float *k,
                                    const float *v, const float *dout, float *o, float *dq,
                                    float *dk, float *dv, int repeats, double *ms,
                                    char why[256])
{
    return backward_on_device(true, p, q, k, v, dout, o, dq, dk, dv, repeats, ms, why);
}

