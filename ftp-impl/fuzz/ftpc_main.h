/* ftpc_main.h - ftpc's main() under another name, so the fuzz targets can
 * link ftpc.c beside libFuzzer's own main(). */
#ifndef FUZZ_FTPC_MAIN_H
#define FUZZ_FTPC_MAIN_H

#define main ftpc_main
int ftpc_main(int argc, char **argv);

#endif
