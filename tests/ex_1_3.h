/* Exercise 1.3: arithmetic intensity of S = QK^T in fp32, and the head
   dimension at which it reaches a ridge point (flops per byte). */
#ifndef EX_1_3_H
#define EX_1_3_H
double ex_score_intensity(double n, double d);
double ex_ridge_dim(double n, double ridge);
#endif
