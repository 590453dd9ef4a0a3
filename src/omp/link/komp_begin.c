/*
 * Linked first into a `knitcc -fopenmp` program (docs/openmp.md): the
 * page-aligned marks where the program's own .data and .bss begin (the
 * linker lays input sections out in command-line order, after the C
 * library's copies of stdout and the like), and the wrappers that hand
 * main and exit to komp (-Wl,--wrap=main,--wrap=exit).  src/omp/link/komp_end.c
 * has the marks' ends.
 */
char komp_data_begin[1] __attribute__((aligned(4096))) = {1};
char komp_bss_begin[1] __attribute__((aligned(4096)));

extern char komp_data_end[], komp_bss_end[];
extern int __real_main(int argc, char **argv, char **envp);
extern int komp_main(int argc, char **argv, char **envp, int (*main_fn)(int, char **, char **),
                     char *const marks[4]);
extern void __real_exit(int code) __attribute__((noreturn));
extern void komp_exit(int code);

int __wrap_main(int argc, char **argv, char **envp);
int __wrap_main(int argc, char **argv, char **envp)
{
    char *const marks[4] = {komp_data_begin, komp_data_end, komp_bss_begin, komp_bss_end};
    return komp_main(argc, argv, envp, __real_main, marks);
}

void __wrap_exit(int code) __attribute__((noreturn));
void __wrap_exit(int code)
{
    komp_exit(code);
    __real_exit(code);
}
