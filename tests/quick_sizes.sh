# quick_sizes.sh — each chapter program with small sizes (sourced by the
# bad-input suite and the valgrind check). Tangled from chapters/app_robustness.nw.
programs="ch01 ch02 ch03 ch04 ch05 ch06 ch07 ch08 ch09 ch10 ch11 ch12 ch13"
quick() {   # quick PROGRAM: the program's name and small-size options
    case $1 in
        ch01*) echo "ch01_memory_ladder --quick --max-mib 1 --repeats 1 --seq 64" ;;
        ch02*) echo "ch02_online_softmax" ;;
        ch03*) echo "ch03_compose --cols 256" ;;
        ch04*) echo "ch04_tiled --seq 16 --heads 1 --dim 8" ;;
        ch05*) echo "ch05_exact --seq 32 --dim 8 --heads 1 --batch 1" ;;
        ch06*) echo "ch06_memory --seq 64 --heads 1 --dim 8 --block 16" ;;
        ch07*) echo "ch07_causal_skip --seq 64 --heads 1 --dim 8 --map-block 16" ;;
        ch08*) echo "ch08_fused_timing --seq 64 --heads 1 --dim 8 --repeats 1" ;;
        ch09*) echo "ch09_backward --seq 16 --heads 1 --dim 8" ;;
        ch10*) echo "ch10_gpu --device cpu --seq 16 --heads 1 --dim 8" ;;
        ch11*) echo "ch11_amx --quick --kernel emulated --seq 16 --heads 1 --dim 8 --repeats 1" ;;
        ch12*) echo "ch12_real_model --quick" ;;
        ch13*) echo "ch13_ring --seq 16 --heads 1 --dim 8" ;;
    esac
}
