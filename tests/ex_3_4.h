/* Exercise 3.4: the merge of two partial softmaxes given by their
   log-sum-exps lambda = m + ln l. */
#ifndef EX_3_4_H
#define EX_3_4_H
float ex_lse_merge(float lambda_1, float lambda_2);
#endif
