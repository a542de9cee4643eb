/* score_traffic.c — chapter 1's arithmetic. Tangled from
   chapters/ch01_memory_ladder.nw; edit that file, not this one. */
#include "cpu/score_traffic.h"
double score_bytes(attention_shape s)
{
    return (double)s.seq * (double)s.seq * (double)s.heads * FLOAT_BYTES;
}

double operand_bytes(attention_shape s)
{
    return (double)s.seq * (double)s.dim * (double)s.heads * FLOAT_BYTES;
}

double transfer_ms(double bytes, double tbs)
{
    return bytes / (tbs * 1e12) * 1e3;
}

void naive_traffic(attention_shape s, traffic_step out[NAIVE_STEPS])
{
    double op = operand_bytes(s), sc = score_bytes(s);
    out[0] = (traffic_step){ "S = scale QK^T", "Q, K", "S", 2 * op, sc };
    out[1] = (traffic_step){ "P = softmax(S)", "S", "P", sc, sc };
    out[2] = (traffic_step){ "O = PV", "P, V", "O", sc + op, op };
}

double naive_total_bytes(attention_shape s)
{
    traffic_step steps[NAIVE_STEPS];
    naive_traffic(s, steps);
    double total = 0;
    for (int i = 0; i < NAIVE_STEPS; i++)
        total += steps[i].read_bytes + steps[i].write_bytes;
    return total;
}

const gpu_spec gpu_specs[GPU_COUNT] = {
    { "A100 SXM 80GB", 80, 2.039, 108, 192 },
    { "H100 SXM", 80, 3.35, 132, 256 },
    { "H200 SXM", 141, 4.8, 132, 256 },
};

double sm_sram_bytes(const gpu_spec *g)
{
    return (double)g->sram_kib * 1024.0;
}

double gpu_sram_bytes(const gpu_spec *g)
{
    return sm_sram_bytes(g) * g->sms;
}

