/* vec_end.h — releases the names cpu/vec.h gave for one vector width, so that
   the next width can give them again.
   Tangled from chapters/ch08_fused_timing.nw; edit that file instead. */
#undef VEC_WIDTH
#undef W
#undef V
#undef FN
#undef VI
#undef VZERO
#undef VLOAD
#undef VSTORE
#undef VSET1
#undef VFMA
#undef VMUL
#undef VADD
#undef VSUB
#undef VMAX
#undef VEXP
#undef VHMAX
#undef VHSUM
#undef VKEEP
