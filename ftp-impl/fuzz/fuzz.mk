# fuzz.mk - the libFuzzer targets (fuzz/README.md), included by ../Makefile.
# Built with clang into their own tree; the regular builds are untouched.
#   make fuzz-build            -> build-fuzz/fuzz_<target>
#   make fuzz                  -> run each target FUZZ_SECONDS s (fuzz/run.py)
#   make fuzz FUZZ_MERGE=1     -> also merge what was found into fuzz/corpus/
#   make fuzz-regress          -> replay fuzz/regressions/ and the corpus once

FUZZ_CC      ?= clang
FUZZ_BUILD   ?= build-fuzz
FUZZ_SECONDS ?= 60
FUZZ_TARGETS ?= cmdio session addrparse reply listing confine msxfer cmdline \
                blockmode extblock httpmsg
FUZZ_WORK    ?= $(FUZZ_BUILD)/work
FUZZ_SAN     := -fsanitize=address,undefined -fno-sanitize-recover=undefined
FUZZ_CFLAGS  := $(CSTD) $(WARN) -Wno-unused-command-line-argument -O1 -g \
                -fno-omit-frame-pointer $(FUZZ_SAN) -fsanitize=fuzzer-no-link
# clang, unlike gcc, also asks for a format attribute on str.c's static
# vsnprintf wrapper; the regular gcc builds keep the full warning.
FUZZ_SRCFLAGS := -Wno-format-nonliteral

# Objects of src/ for the session and client targets: the programs' own
# lists (../Makefile), but for the real transport (fuzz/memxp.c replaces it)
# and the file with main(): ftpd's process layer stays out, ftpc.c is built
# apart below.  A file added to a program joins its targets by itself.
FUZZ_NOT     := transport ftpd ftpc
FUZZ_SERVER  := $(filter-out $(FUZZ_NOT),$(COMMON) $(SERVER))
FUZZ_CLIENT  := $(filter-out $(FUZZ_NOT),$(COMMON) $(CLIENT))
FUZZ_HELPERS := memxp checks tree
FUZZ_CMDLINE := str sysutil addrparse xpopts cliargs tunables clientopts bulkopts

fo = $(1:%=$(FUZZ_BUILD)/src/%.o)
ho = $(FUZZ_HELPERS:%=$(FUZZ_BUILD)/%.o)

FUZZ_BINS := $(FUZZ_TARGETS:%=$(FUZZ_BUILD)/fuzz_%)

fuzz-build: $(FUZZ_BINS)

# wraps.c: which runs may have changed the tree; no poll on memory; socket
# options and the data pump's send and sendfile on the in-memory transport.
FUZZ_WRAPS   := sys_open sys_wait_fd sys_setsockopt_int send sendfile
# bigalloc.c: a large block freed is kept, poisoned, for the next run's
# sys_malloc of that size (no mmap, page faults and quarantine per run).
FUZZ_BIGWRAPS := sys_malloc free realloc
FUZZ_BIGLD   := $(FUZZ_BIGWRAPS:%=-Wl,--wrap=%)
$(FUZZ_BUILD)/fuzz_cmdio $(FUZZ_BUILD)/fuzz_session: \
    $(call fo,$(FUZZ_SERVER)) $(ho) $(FUZZ_BUILD)/wraps.o $(FUZZ_BUILD)/bigalloc.o
$(FUZZ_BUILD)/fuzz_cmdio $(FUZZ_BUILD)/fuzz_session: \
    FUZZ_LDFLAGS := $(FUZZ_WRAPS:%=-Wl,--wrap=%) $(FUZZ_BIGLD)
$(FUZZ_BUILD)/fuzz_addrparse $(FUZZ_BUILD)/fuzz_confine: \
    $(call fo,str addrparse confine) $(ho)
$(FUZZ_BUILD)/fuzz_blockmode: $(call fo,blockmode)
$(FUZZ_BUILD)/fuzz_extblock: $(call fo,extblock)
$(FUZZ_BUILD)/fuzz_httpmsg: $(call fo,httpmsg str)
$(FUZZ_BUILD)/fuzz_reply $(FUZZ_BUILD)/fuzz_msxfer: \
    $(call fo,$(FUZZ_CLIENT)) $(FUZZ_BUILD)/src/ftpc.o $(ho) $(FUZZ_BUILD)/fclient.o \
    $(FUZZ_BUILD)/bigalloc.o
# the listing target includes ftpc.c itself (its split and match are static)
$(FUZZ_BUILD)/fuzz_listing: $(call fo,$(FUZZ_CLIENT)) $(ho) $(FUZZ_BUILD)/fclient.o \
    $(FUZZ_BUILD)/bigalloc.o
$(FUZZ_BUILD)/fuzz_reply $(FUZZ_BUILD)/fuzz_msxfer $(FUZZ_BUILD)/fuzz_listing: \
    FUZZ_LDFLAGS := $(FUZZ_BIGLD)

# --wrap=exit: a usage error returns to the target; --wrap=getaddrinfo: no DNS.
$(FUZZ_BUILD)/fuzz_cmdline: $(call fo,$(FUZZ_CMDLINE)) $(ho)
$(FUZZ_BUILD)/fuzz_cmdline: FUZZ_LDFLAGS := -Wl,--wrap=exit,--wrap=getaddrinfo

$(FUZZ_BUILD)/fuzz_%: $(FUZZ_BUILD)/fuzz_%.o
	$(FUZZ_CC) $(FUZZ_SAN) -fsanitize=fuzzer $(FUZZ_LDFLAGS) -o $@ $^ $(LDLIBS)

$(FUZZ_BUILD)/src/%.o: src/%.c $(wildcard src/*.h) | $(FUZZ_BUILD)/src
	$(FUZZ_CC) $(FUZZ_CFLAGS) $(FUZZ_SRCFLAGS) -c -o $@ $<

# ftpc's main() would clash with libFuzzer's: renamed ftpc_main here.
$(FUZZ_BUILD)/src/ftpc.o: src/ftpc.c $(wildcard src/*.h) fuzz/ftpc_main.h | $(FUZZ_BUILD)/src
	$(FUZZ_CC) $(FUZZ_CFLAGS) $(FUZZ_SRCFLAGS) -include fuzz/ftpc_main.h -c -o $@ $<

$(FUZZ_BUILD)/%.o: fuzz/%.c $(wildcard fuzz/*.h src/*.h) | $(FUZZ_BUILD)/src
	$(FUZZ_CC) $(FUZZ_CFLAGS) $(FUZZ_SRCFLAGS) -Isrc -Ifuzz -c -o $@ $<

$(FUZZ_BUILD)/src:
	mkdir -p $@

FUZZ_RUN = /usr/bin/python3 fuzz/run.py --build $(FUZZ_BUILD) --work $(FUZZ_WORK) \
           --targets "$(FUZZ_TARGETS)"

fuzz: fuzz-build
	$(FUZZ_RUN) --seconds $(FUZZ_SECONDS) $(if $(filter 1,$(FUZZ_MERGE)),--merge)

fuzz-regress: fuzz-build
	$(FUZZ_RUN) --replay-only

.PHONY: fuzz fuzz-build fuzz-regress
