# commlab - a plain GNU Makefile.  Everything built goes under build/.
#
#   make            build build/commlab (installs missing packages first)
#   make test       unit tests (cmocka), CLI tests (some also on the CLI built
#                   with sanitizers), then the unit tests again under
#                   AddressSanitizer + UndefinedBehaviorSanitizer, and every
#                   fuzz target built and run once over its seeds
#   make demo       build and run the main job
#   make bench      benchmarks (print figures, assert nothing)
#   make fuzz       every libFuzzer target of tests/fuzz/ (clang, ASan+UBSan)
#                   for FUZZ_SECONDS seconds each (default 60)
#   make deps       install missing Debian packages
#   make install PREFIX=/usr/local
#   make clean

# Every core builds: -j from the number of cores unless the command line
# gives its own -j.
NPROC   := $(shell nproc 2>/dev/null || echo 1)
MAKEFLAGS += -j$(NPROC)

CC      ?= cc
PREFIX  ?= /usr/local
BUILD   := build
PKGS    := yaml-0.1 hwloc libfabric cmocka
LINK_PKGS := yaml-0.1 hwloc cmocka
DEB_PKGS := libyaml-dev libhwloc-dev hwloc libfabric-dev libfabric-bin \
            libcmocka-dev gnuplot-nox openmpi-bin libopenmpi-dev pkg-config procps \
            iproute2 clang libclang-rt-14-dev

# The mpi backend (real/mpi/mpib*.c) is built where Open MPI's compiler
# wrapper mpicc is found: its flags, and CL_HAVE_MPI, go to every object
# (without it those files are empty and `--backend mpi` says it is not built).
MPI_CFLAGS = $(shell mpicc --showme:compile 2>/dev/null)
MPI_DEFS   = $(if $(MPI_CFLAGS),-DCL_HAVE_MPI)

# pkg-config and mpicc are asked lazily (=) so `make deps` can install them first.
# Nothing is linked with libfabric or the MPI library: their headers are
# used, and the libraries are opened when a command needs them
# (real/dlib.h; loading libfabric costs every command 0.2 s on Debian).
PKG_CFLAGS = $(shell pkg-config --cflags $(PKGS) 2>/dev/null) $(MPI_CFLAGS) $(MPI_DEFS)
PKG_LIBS   = $(shell pkg-config --libs $(LINK_PKGS) 2>/dev/null)

# V=1 shows every command.
V ?= 0
ifeq ($(V),0)
Q := @
say = @printf '  %-5s %s\n' $(1) $(2);
else
Q :=
say =
endif

WARN     := -std=c11 -Wall -Wextra -Werror
CPPFLAGS := -D_GNU_SOURCE -Iinclude -I. -MMD -MP
CFLAGS   ?= -O2 -g
# The release binary is optimized across files at link time: the hot path
# runs through cl_isend, the engine, the matching and the queue, each in a
# file of its own, and inlining across them made the 1,000-rank ring 6 %
# faster (README, beside `bench sim`'s figures).  Fat objects keep the
# ordinary code too, so the tests link the same library without paying
# the whole program's optimization at every link.  LTO= turns it off.
LTO      ?= -flto=auto -ffat-lto-objects
# Every other link takes the ordinary code (gcc's linker plugin would
# otherwise optimize any link of objects that carry LTO code).
NO_LTO   := $(if $(LTO),-fno-lto)
# At the whole program's link "may be used uninitialized" is off: a result
# filled in only on success (cfg_string(..., &s)) reads as unset once the
# error path is inlined from another file; each file's compile still
# warns about its own.
LTO_WARN := $(if $(LTO),-Wno-maybe-uninitialized)
# The matching stays out: inlined across files it made the 512-rank linear
# all-to-all 10 % slower (its chains' loads are the run's stalls, and their
# fetches ahead are placed with care); out of it that run is as fast as
# before, and the ring keeps all its gain.
$(BUILD)/rel/core/match.o $(BUILD)/pgo/core/match.o: private LTO :=
SAN      := -fsanitize=address,undefined -fno-omit-frame-pointer -fno-sanitize-recover=all
# -z now: every symbol bound at start, so no rank takes a copy-on-write
# fault resolving a libc call first made inside a timed iteration (and the
# table is read-only from then on).
LDLIBS    = $(PKG_LIBS) -lm -ldl -lpthread -Wl,-z,relro,-z,now

LIB_SRC  := $(sort $(wildcard core/*.c sim/*.c real/*.c real/mpi/mpib*.c chapters/*/*.c))
ASM_SRC  := $(sort $(wildcard sim/*.S))
CLI_SRC  := $(sort $(wildcard cli/*.c))
TEST_SRC := $(sort $(wildcard tests/test_*.c))
TOOL_SRC := $(sort $(wildcard tests/tool_*.c))

obj = $(patsubst %.c,$(1)/%.o,$(patsubst %.S,$(1)/%.o,$(2)))

LIB_OBJ      := $(call obj,$(BUILD)/rel,$(LIB_SRC) $(ASM_SRC))
# The simulator's hot path (the engine, the API it is called through, the
# matching, the patterns) at -O3 on top of CFLAGS: it runs once or more per
# message, millions of times a run, and -O3's further inlining and
# unrolling made it measurably faster there (README, beside `bench sim`'s
# figures, has what was measured).
HOT_SRC      := $(sort $(wildcard sim/*.c chapters/*/*.c) core/comm.c core/match.c)
HOT_OBJ      := $(call obj,$(BUILD)/rel,$(HOT_SRC))
$(HOT_OBJ): private HOT := -O3
CLI_OBJ      := $(call obj,$(BUILD)/rel,$(CLI_SRC))
LIB_OBJ_SAN  := $(call obj,$(BUILD)/san,$(LIB_SRC) $(ASM_SRC))
TESTS        := $(patsubst tests/%.c,$(BUILD)/tests/%,$(TEST_SRC))
TESTS_SAN    := $(patsubst tests/%.c,$(BUILD)/tests-san/%,$(TEST_SRC))
TOOLS        := $(patsubst tests/%.c,$(BUILD)/tests/%,$(TOOL_SRC))

.PHONY: all deps test unit-test cli-test san-test demo bench bench-deps fuzz install clean
.DEFAULT_GOAL := all

all: $(BUILD)/commlab

deps:
	@sh cli/deps.sh $(DEB_PKGS)

$(BUILD)/libcommlab.a: $(LIB_OBJ)
	@mkdir -p $(@D)
	$(call say,AR,$@)rm -f $@ && $(AR) rcs $@ $^

$(BUILD)/commlab: $(CLI_OBJ) $(BUILD)/libcommlab.a
	$(call say,CC,$@)$(CC) $(WARN) $(LTO_WARN) $(CFLAGS) $(LTO) -rdynamic -o $@ $(CLI_OBJ) $(BUILD)/libcommlab.a $(LDLIBS)

$(BUILD)/rel/%.o: %.c | deps
	@mkdir -p $(@D)
	$(call say,CC,$@)$(CC) $(WARN) $(CPPFLAGS) $(PKG_CFLAGS) $(CFLAGS) $(HOT) $(LTO) $(PGO_USE) -c -o $@ $<

# The hot path is also optimized from a profile (PGO=0 turns it off; it
# takes gcc).  Its files are built once more, instrumented, under
# $(BUILD)/pgo; a short training run of the simulator (PGO_TRAIN: the
# lockstep ring of `bench sim`, a contended all-to-all, a ping-pong with
# payloads, a pipeline) counts the branches and calls it takes, and the
# release objects are compiled with those counts: the common path laid out
# straight, inlined where the calls are made.  The ring runs at two rank
# counts: trained at one (256) gcc divided by it with a shift and sent
# every other count to a slow path.  Code the training never ran
# is optimized as it would be without a profile (-fprofile-partial-training).
# With LTO it made the 1,000-rank ring another 12 % faster (README).  The
# profile is made again when a hot file changes, not when a command's does.
PGO ?= 1
PGO_TRAIN := 'allreduce-ring -n 150 --bytes 1MiB --no-payload --tier infiniband --reduce-bandwidth inf' \
             'allreduce-ring -n 211 --bytes 1MiB --no-payload --tier infiniband --reduce-bandwidth inf' \
             'alltoall --algo linear -n 32 --bytes 64KiB' \
             'pingpong --sizes 8:4MiB:x8 --iters 4' \
             'pipeline -n 4 --sizes 1KiB,1MiB --iters 2'
ifeq ($(PGO),1)
PGO_OBJ := $(call obj,$(BUILD)/pgo,$(HOT_SRC))
PROFILE := $(BUILD)/pgo/profile.stamp
$(HOT_OBJ): $(PROFILE)
$(HOT_OBJ): private PGO_USE = -fprofile-use -fprofile-partial-training \
    -dumpdir $(BUILD)/pgo/$(dir $<) -dumpbase $(basename $(notdir $<))
endif

$(BUILD)/pgo/%.o: %.c | deps
	@mkdir -p $(@D)
	$(call say,CC,$@)$(CC) $(WARN) $(CPPFLAGS) $(PKG_CFLAGS) $(CFLAGS) -O3 $(LTO) -fprofile-generate -c -o $@ $<

# The counts land beside the instrumented objects (x.gcda for x.o).  A
# release object is compiled as if it were its instrumented twin
# (-dumpdir, -dumpbase): that is where it finds its counts, and gcc names
# a file's static functions in a profile after the object's path.
$(PROFILE): $(PGO_OBJ) | $(filter-out $(HOT_OBJ),$(LIB_OBJ)) $(CLI_OBJ)
	$(call say,LD,$(BUILD)/pgo/commlab)$(CC) $(CFLAGS) $(NO_LTO) -fprofile-generate -rdynamic -o $(BUILD)/pgo/commlab \
	    $(CLI_OBJ) $(PGO_OBJ) $(filter-out $(HOT_OBJ),$(LIB_OBJ)) $(LDLIBS)
	$(Q)find $(BUILD)/pgo -name '*.gcda' -delete
	$(Q)for a in $(PGO_TRAIN); do \
	    printf '  %-5s %s\n' TRAIN "$$a"; \
	    COMMLAB_HOME=$(CURDIR) $(BUILD)/pgo/commlab run $$a > /dev/null || exit 1; done
	$(Q)touch $@

$(BUILD)/rel/%.o: %.S | deps
	@mkdir -p $(@D)
	$(call say,CC,$@)$(CC) $(CPPFLAGS) $(CFLAGS) -c -o $@ $<

$(BUILD)/san/%.o: %.c | deps
	@mkdir -p $(@D)
	$(call say,CC,$@)$(CC) $(WARN) $(CPPFLAGS) $(PKG_CFLAGS) -O1 -g $(SAN) -c -o $@ $<

$(BUILD)/san/%.o: %.S | deps
	@mkdir -p $(@D)
	$(call say,CC,$@)$(CC) $(CPPFLAGS) -O1 -g -c -o $@ $<

$(BUILD)/libcommlab-san.a: $(LIB_OBJ_SAN)
	@mkdir -p $(@D)
	$(call say,AR,$@)rm -f $@ && $(AR) rcs $@ $^

# The CLI under ASan+UBSan, for the CLI tests that run sanitized.
CLI_OBJ_SAN := $(call obj,$(BUILD)/san,$(CLI_SRC))
$(BUILD)/commlab-san: $(CLI_OBJ_SAN) $(BUILD)/libcommlab-san.a
	$(call say,CC,$@)$(CC) -O1 -g $(SAN) -rdynamic -o $@ $(CLI_OBJ_SAN) $(BUILD)/libcommlab-san.a $(LDLIBS)

# test_fault's own patterns call exit() and fork() as a student's shared
# object does (cli/student.c), and reach the simulator's guard the same way.
WRAP_RANK_CALLS := -Wl,--wrap=exit,--wrap=_exit,--wrap=_Exit,--wrap=fork
$(BUILD)/tests/test_fault $(BUILD)/tests-san/test_fault: LDLIBS += $(WRAP_RANK_CALLS)

$(BUILD)/tests/%: tests/%.c $(BUILD)/libcommlab.a
	@mkdir -p $(@D)
	$(call say,CC,$@)$(CC) $(WARN) $(CPPFLAGS) $(PKG_CFLAGS) $(CFLAGS) $(NO_LTO) -o $@ $< $(BUILD)/libcommlab.a $(LDLIBS)

$(BUILD)/tests-san/%: tests/%.c $(BUILD)/libcommlab-san.a
	@mkdir -p $(@D)
	$(call say,CC,$@)$(CC) $(WARN) $(CPPFLAGS) $(PKG_CFLAGS) -O1 -g $(SAN) -o $@ $< $(BUILD)/libcommlab-san.a $(LDLIBS)

# tests/run.sh runs every binary even when one fails and prints the one
# "N passed, N failed" line.  Objects wait for `deps` (order-only: it runs
# first, and never makes anything out of date).
test: $(BUILD)/commlab $(TESTS) $(TOOLS) $(TESTS_SAN) $(BUILD)/commlab-san
	@sh tests/run.sh $(BUILD) $(TESTS) -- $(TESTS_SAN)
	@sh tests/fuzz/run.sh $(BUILD) 0

demo: all
	@sh cli/demo.sh $(BUILD)/commlab

# The Open MPI reference ping-pong `commlab bench shm` compares against;
# built only where mpicc exists (bench says so when it is missing).
$(BUILD)/mpi_pingpong: real/mpi/mpi_pingpong.c | deps
	@mkdir -p $(@D)
	$(call say,MPICC,$@)mpicc -O2 -std=c11 -Wall -Wextra -Werror -o $@ $<

MPI_BENCH := $(if $(shell command -v mpicc 2>/dev/null),$(BUILD)/mpi_pingpong)

# The SimGrid references `commlab bench sim` compares the simulator's speed
# with (Debian's libsimgrid-dev, installed by `make bench` only: nothing
# else needs it).  Where it cannot be installed, bench says so.
BENCH_DEB_PKGS := libsimgrid-dev

bench-deps:
	@sh cli/deps.sh $(BENCH_DEB_PKGS) || echo "commlab: bench runs without the SimGrid reference"

$(BUILD)/simgrid_ref: sim/simgrid/reference.c | bench-deps
	@mkdir -p $(@D)
	$(Q)if pkg-config --exists simgrid; then \
	    printf '  %-5s %s\n' CC $@; \
	    $(CC) -O2 -std=c11 -Wall -Wextra -Werror -o $@ $< $$(pkg-config --cflags --libs simgrid); \
	fi

bench: all $(MPI_BENCH) $(BUILD)/simgrid_ref
	$(BUILD)/commlab bench all

# libFuzzer targets (tests/fuzz/fuzz_*.c): clang with ASan+UBSan, the
# library rebuilt with coverage; tests/fuzz/run.sh seeds and runs them.
FUZZ_CC      := clang
FUZZ_SECONDS ?= 60
FUZZ_CFLAGS  := -O1 -g -fno-omit-frame-pointer -fno-sanitize-recover=all \
                -fsanitize=address,undefined
FUZZ_SRC     := $(sort $(wildcard tests/fuzz/fuzz_*.c))
FUZZ_BIN     := $(patsubst tests/fuzz/%.c,$(BUILD)/fuzz/%,$(FUZZ_SRC))
FUZZ_LIB_OBJ := $(call obj,$(BUILD)/fuzz/obj,$(LIB_SRC) $(ASM_SRC) cli/course.c cli/util.c cli/near.c)

$(BUILD)/fuzz/obj/%.o: %.c | deps
	@mkdir -p $(@D)
	$(call say,CLANG,$@)$(FUZZ_CC) $(WARN) $(CPPFLAGS) $(PKG_CFLAGS) $(FUZZ_CFLAGS) \
	    -fsanitize=fuzzer-no-link -c -o $@ $<

$(BUILD)/fuzz/obj/%.o: %.S | deps
	@mkdir -p $(@D)
	$(call say,CLANG,$@)$(FUZZ_CC) $(CPPFLAGS) -O1 -g -c -o $@ $<

$(BUILD)/libcommlab-fuzz.a: $(FUZZ_LIB_OBJ)
	$(call say,AR,$@)rm -f $@ && $(AR) rcs $@ $^

$(BUILD)/fuzz/fuzz_%: tests/fuzz/fuzz_%.c tests/fuzz/fuzz.h $(BUILD)/libcommlab-fuzz.a
	@mkdir -p $(@D)
	$(call say,CLANG,$@)$(FUZZ_CC) $(WARN) $(CPPFLAGS) $(PKG_CFLAGS) $(FUZZ_CFLAGS) \
	    -fsanitize=fuzzer -Wl,--as-needed -o $@ $< $(BUILD)/libcommlab-fuzz.a $(LDLIBS)

$(BUILD)/fuzz/seed_wire: tests/fuzz/seed_wire.c $(BUILD)/libcommlab.a
	@mkdir -p $(@D)
	$(call say,CC,$@)$(CC) $(WARN) $(CPPFLAGS) $(PKG_CFLAGS) $(CFLAGS) $(NO_LTO) -o $@ $< $(BUILD)/libcommlab.a $(LDLIBS)

fuzz: $(FUZZ_BIN) $(BUILD)/fuzz/seed_wire
	@sh tests/fuzz/run.sh $(BUILD) $(FUZZ_SECONDS)

# `make test` builds the fuzz targets too and runs each once over its
# seeds (nothing mutated, the same inputs every time), so none stops
# building or crashing on the inputs it starts from unseen.
test: $(FUZZ_BIN) $(BUILD)/fuzz/seed_wire

# What is shipped: the tracked files of configs, chapters, plots and
# include; never this host's machine files (configs/machines/*.yaml, written
# by calibrate, per host) nor rendered figures (plots/out).
SHARE := $(DESTDIR)$(PREFIX)/share/commlab
install: all
	install -d $(DESTDIR)$(PREFIX)/bin $(SHARE)
	install -m 755 $(BUILD)/commlab $(DESTDIR)$(PREFIX)/bin/commlab
	for d in configs chapters plots include; do \
	    if [ -d $$d ]; then cp -R $$d $(SHARE)/; fi; done
	rm -rf $(SHARE)/plots/out
	rm -f $(SHARE)/configs/machines/*.yaml

clean:
	rm -rf $(BUILD) plots/out

-include $(shell find $(BUILD) -name '*.d' -type f 2>/dev/null)
