/* Linked last into a `knitcc -fopenmp` program: where its own .data and
 * .bss end (src/omp/link/komp_begin.c). */
char komp_data_end[1] __attribute__((aligned(4096))) = {1};
char komp_bss_end[1] __attribute__((aligned(4096)));
