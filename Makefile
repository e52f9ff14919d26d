# commlab - a plain GNU Makefile.  Everything built goes under build/.
#
#   make            build build/commlab (installs missing packages first)
#   make test       unit tests (cmocka), CLI tests, then the unit tests again
#                   under AddressSanitizer + UndefinedBehaviorSanitizer
#   make demo       build and run the main job
#   make bench      benchmarks (print figures, assert nothing)
#   make deps       install missing Debian packages
#   make install PREFIX=/usr/local
#   make clean

CC      ?= cc
PREFIX  ?= /usr/local
BUILD   := build
PKGS    := yaml-0.1 hwloc libfabric cmocka
DEB_PKGS := libyaml-dev libhwloc-dev hwloc libfabric-dev libfabric-bin \
            libcmocka-dev gnuplot-nox openmpi-bin libopenmpi-dev pkg-config procps \
            iproute2

# The mpi backend (real/mpi/mpib*.c) is built where Open MPI's compiler
# wrapper mpicc is found: its flags, and CL_HAVE_MPI, go to every object
# (without it those files are empty and `--backend mpi` says it is not built).
MPI_CFLAGS = $(shell mpicc --showme:compile 2>/dev/null)
MPI_LIBS   = $(shell mpicc --showme:link 2>/dev/null)
MPI_DEFS   = $(if $(MPI_CFLAGS),-DCL_HAVE_MPI)

# pkg-config and mpicc are asked lazily (=) so `make deps` can install them first.
PKG_CFLAGS = $(shell pkg-config --cflags $(PKGS) 2>/dev/null) $(MPI_CFLAGS) $(MPI_DEFS)
PKG_LIBS   = $(shell pkg-config --libs $(PKGS) 2>/dev/null) $(MPI_LIBS)

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
SAN      := -fsanitize=address,undefined -fno-omit-frame-pointer -fno-sanitize-recover=all
LDLIBS    = $(PKG_LIBS) -lm -ldl -lpthread

LIB_SRC  := $(sort $(wildcard core/*.c sim/*.c real/*.c real/mpi/mpib*.c chapters/*/*.c))
ASM_SRC  := $(sort $(wildcard sim/*.S))
CLI_SRC  := $(sort $(wildcard cli/*.c))
TEST_SRC := $(sort $(wildcard tests/test_*.c))
TOOL_SRC := $(sort $(wildcard tests/tool_*.c))

obj = $(patsubst %.c,$(1)/%.o,$(patsubst %.S,$(1)/%.o,$(2)))

LIB_OBJ      := $(call obj,$(BUILD)/rel,$(LIB_SRC) $(ASM_SRC))
CLI_OBJ      := $(call obj,$(BUILD)/rel,$(CLI_SRC))
LIB_OBJ_SAN  := $(call obj,$(BUILD)/san,$(LIB_SRC) $(ASM_SRC))
TESTS        := $(patsubst tests/%.c,$(BUILD)/tests/%,$(TEST_SRC))
TESTS_SAN    := $(patsubst tests/%.c,$(BUILD)/tests-san/%,$(TEST_SRC))
TOOLS        := $(patsubst tests/%.c,$(BUILD)/tests/%,$(TOOL_SRC))

.PHONY: all deps test unit-test cli-test san-test demo bench bench-deps install clean
.DEFAULT_GOAL := all

all: $(BUILD)/commlab

deps:
	@sh cli/deps.sh $(DEB_PKGS)

$(BUILD)/libcommlab.a: $(LIB_OBJ)
	@mkdir -p $(@D)
	$(call say,AR,$@)$(AR) rcs $@ $^

$(BUILD)/commlab: $(CLI_OBJ) $(BUILD)/libcommlab.a
	$(call say,CC,$@)$(CC) $(CFLAGS) -rdynamic -o $@ $(CLI_OBJ) $(BUILD)/libcommlab.a $(LDLIBS)

$(BUILD)/rel/%.o: %.c | deps
	@mkdir -p $(@D)
	$(call say,CC,$@)$(CC) $(WARN) $(CPPFLAGS) $(PKG_CFLAGS) $(CFLAGS) -c -o $@ $<

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
	$(call say,AR,$@)$(AR) rcs $@ $^

$(BUILD)/tests/%: tests/%.c $(BUILD)/libcommlab.a
	@mkdir -p $(@D)
	$(call say,CC,$@)$(CC) $(WARN) $(CPPFLAGS) $(PKG_CFLAGS) $(CFLAGS) -o $@ $< $(BUILD)/libcommlab.a $(LDLIBS)

$(BUILD)/tests-san/%: tests/%.c $(BUILD)/libcommlab-san.a
	@mkdir -p $(@D)
	$(call say,CC,$@)$(CC) $(WARN) $(CPPFLAGS) $(PKG_CFLAGS) -O1 -g $(SAN) -o $@ $< $(BUILD)/libcommlab-san.a $(LDLIBS)

# tests/run.sh runs every binary even when one fails and prints the one
# "N passed, N failed" line.  Objects wait for `deps` (order-only: it runs
# first, and never makes anything out of date).
test: $(BUILD)/commlab $(TESTS) $(TOOLS) $(TESTS_SAN)
	@sh tests/run.sh $(BUILD) $(TESTS) -- $(TESTS_SAN)

demo: all
	@sh cli/demo.sh $(BUILD)/commlab

# The Open MPI reference ping-pong `commlab bench shm` compares against;
# built only where mpicc exists (bench says so when it is missing).
$(BUILD)/mpi_pingpong: real/mpi/mpi_pingpong.c | deps
	@mkdir -p $(@D)
	$(call say,MPICC,$@)mpicc -O2 -std=c11 -Wall -Wextra -Werror -o $@ $<

MPI_BENCH := $(if $(shell command -v mpicc 2>/dev/null),$(BUILD)/mpi_pingpong)

# The SimGrid reference `commlab bench sim` compares the simulator's speed
# with (Debian's libsimgrid-dev, installed by `make bench` only: nothing
# else needs it).  Where it cannot be installed, bench says so.
BENCH_DEB_PKGS := libsimgrid-dev

bench-deps:
	@sh cli/deps.sh $(BENCH_DEB_PKGS) || echo "commlab: bench runs without the SimGrid reference"

$(BUILD)/simgrid_ring: sim/simgrid/ring_allreduce.c | bench-deps
	@mkdir -p $(@D)
	$(Q)if pkg-config --exists simgrid; then \
	    printf '  %-5s %s\n' CC $@; \
	    $(CC) -O2 -std=c11 -Wall -Wextra -Werror -o $@ $< $$(pkg-config --cflags --libs simgrid); \
	fi

bench: all $(MPI_BENCH) $(BUILD)/simgrid_ring
	$(BUILD)/commlab bench all

install: all
	install -d $(DESTDIR)$(PREFIX)/bin $(DESTDIR)$(PREFIX)/share/commlab
	install -m 755 $(BUILD)/commlab $(DESTDIR)$(PREFIX)/bin/commlab
	for d in configs chapters plots include; do \
	    if [ -d $$d ]; then cp -R $$d $(DESTDIR)$(PREFIX)/share/commlab/; fi; done
	rm -rf $(DESTDIR)$(PREFIX)/share/commlab/plots/out

clean:
	rm -rf $(BUILD) plots/out

-include $(shell find $(BUILD) -name '*.d' 2>/dev/null)
