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

# The objects the targets link, built with clang from each folder into
# $(FUZZ_BUILD)/obj/<folder>/.  common/ is an archive, without the real
# transport (fuzz/memxp.c replaces it); ftpd's and ftpc's folders but for the
# files with main(): ftpd's process layer stays out, and ftpc.c only the
# listing target includes (fuzz_listing.c, its main() renamed by
# ftpc_main.h).  A file added to a folder joins its targets by itself.
fo = $(patsubst %.c,$(FUZZ_BUILD)/obj/%.o,$(1))
FUZZ_COMMON_A := $(FUZZ_BUILD)/obj/libcommon.a
FUZZ_SERVER  := $(call fo,$(filter-out ftpd/ftpd.c,$(wildcard ftpd/*.c)))
FUZZ_CLIENT  := $(call fo,$(filter-out ftpc/ftpc.c,$(wildcard ftpc/*.c)))
FUZZ_HELPERS := memxp checks tree
FUZZ_CMDLINE := $(call fo,ftpd/tunables.c ftpc/clientopts.c bulkflow/bulkopts.c)
FUZZ_INC     := -Icommon -Iftpd -Iftpc -Ibulkflow -Ifuzz

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
    $(FUZZ_SERVER) $(ho) $(FUZZ_BUILD)/wraps.o $(FUZZ_BUILD)/bigalloc.o
$(FUZZ_BUILD)/fuzz_cmdio $(FUZZ_BUILD)/fuzz_session: \
    FUZZ_LDFLAGS := $(FUZZ_WRAPS:%=-Wl,--wrap=%) $(FUZZ_BIGLD)
$(FUZZ_BUILD)/fuzz_addrparse $(FUZZ_BUILD)/fuzz_confine: $(ho)
$(FUZZ_BUILD)/fuzz_reply $(FUZZ_BUILD)/fuzz_msxfer: \
    $(FUZZ_CLIENT) $(ho) $(FUZZ_BUILD)/fclient.o $(FUZZ_BUILD)/bigalloc.o
# the listing target includes ftpc.c itself (its split and match are static)
$(FUZZ_BUILD)/fuzz_listing: $(FUZZ_CLIENT) $(ho) $(FUZZ_BUILD)/fclient.o \
    $(FUZZ_BUILD)/bigalloc.o
$(FUZZ_BUILD)/fuzz_reply $(FUZZ_BUILD)/fuzz_msxfer $(FUZZ_BUILD)/fuzz_listing: \
    FUZZ_LDFLAGS := $(FUZZ_BIGLD)

# --wrap=exit: a usage error returns to the target; --wrap=getaddrinfo: no DNS.
$(FUZZ_BUILD)/fuzz_cmdline: $(FUZZ_CMDLINE) $(ho)
$(FUZZ_BUILD)/fuzz_cmdline: FUZZ_LDFLAGS := -Wl,--wrap=exit,--wrap=getaddrinfo

# Every target: its own objects, then what it takes from common/.
$(FUZZ_BUILD)/fuzz_%: $(FUZZ_BUILD)/fuzz_%.o $(FUZZ_COMMON_A)
	$(FUZZ_CC) $(FUZZ_SAN) -fsanitize=fuzzer $(FUZZ_LDFLAGS) -o $@ \
	    $(filter %.o,$^) $(filter %.a,$^) $(LDLIBS)

$(FUZZ_COMMON_A): $(call fo,$(filter-out common/transport.c,$(wildcard common/*.c)))
	rm -f $@
	$(AR) rcs $@ $^

$(FUZZ_BUILD)/obj/%.o: %.c
	@mkdir -p $(@D)
	$(FUZZ_CC) $(FUZZ_CFLAGS) $(FUZZ_SRCFLAGS) $(DEPS) -Icommon -c -o $@ $<

$(FUZZ_BUILD)/%.o: fuzz/%.c
	@mkdir -p $(@D)
	$(FUZZ_CC) $(FUZZ_CFLAGS) $(FUZZ_SRCFLAGS) $(DEPS) $(FUZZ_INC) -c -o $@ $<

-include $(wildcard $(FUZZ_BUILD)/*.d $(FUZZ_BUILD)/obj/*/*.d)

FUZZ_RUN = /usr/bin/python3 fuzz/run.py --build $(FUZZ_BUILD) --work $(FUZZ_WORK) \
           --targets "$(FUZZ_TARGETS)"

fuzz: fuzz-build
	$(FUZZ_RUN) --seconds $(FUZZ_SECONDS) $(if $(filter 1,$(FUZZ_MERGE)),--merge)

fuzz-regress: fuzz-build
	$(FUZZ_RUN) --replay-only

.PHONY: fuzz fuzz-build fuzz-regress
