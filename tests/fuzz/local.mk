# SPDX-License-Identifier: BSD-3-Clause
# tests/fuzz/local.mk - `make fuzz`
# (included by Makefile.am; paths are from the top of the tree).

# `make fuzz` builds the libFuzzer targets (the layout grammar; the JSON and
# topology reader a user's file goes through; the model, config.json and GPU
# descriptions with the step model, the chooser and the plugin's decision that
# read them) with clang and
# runs each for FUZZ_SECONDS; a crash, leak or UB report fails the target,
# and tests/fuzz/run.sh prints the seed and the input that did it.
FUZZ_SECONDS = 60
FUZZ_FLAGS = -g -O1 -fsanitize=fuzzer,address,undefined -fno-sanitize-recover=all
fuzz:
	@test -n "$(CLANG)" || { echo "make fuzz: clang not found (configure)"; exit 1; }
	$(MKDIR_P) tests/fuzz/work
	$(CLANG) $(FUZZ_FLAGS) -std=c11 -I$(top_srcdir) -I$(top_srcdir)/include \
		$(top_srcdir)/tests/fuzz/fuzz_spec.c \
		$(filter %.c,$(addprefix $(top_srcdir)/,$(common_sources) $(topology_sources) $(planner_sources))) \
		-o tests/fuzz/spec_fuzzer
	cp $(top_srcdir)/tests/fuzz/corpus/* tests/fuzz/work/
	$(SHELL) $(top_srcdir)/tests/fuzz/run.sh spec tests/fuzz/spec_fuzzer -max_total_time=$(FUZZ_SECONDS) \
		-max_len=400 -dict=$(top_srcdir)/tests/fuzz/spec.dict tests/fuzz/work
	$(CLANG) $(FUZZ_FLAGS) -std=c11 -I$(top_srcdir) -I$(top_srcdir)/include \
		$(top_srcdir)/tests/fuzz/fuzz_topo.c \
		$(filter %.c,$(addprefix $(top_srcdir)/,$(common_sources) $(topology_sources) $(planner_sources))) \
		-o tests/fuzz/topo_fuzzer
	$(MKDIR_P) tests/fuzz/work-topo
	cp $(top_srcdir)/tests/fuzz/corpus-topo/* tests/fuzz/work-topo/
	$(SHELL) $(top_srcdir)/tests/fuzz/run.sh topo tests/fuzz/topo_fuzzer -max_total_time=$(FUZZ_SECONDS) \
		-max_len=4096 -dict=$(top_srcdir)/tests/fuzz/topo.dict tests/fuzz/work-topo
	$(CLANG) $(FUZZ_FLAGS) -std=c11 -I$(top_srcdir) -I$(top_srcdir)/include \
		$(top_srcdir)/tests/fuzz/fuzz_model.c \
		$(filter %.c,$(addprefix $(top_srcdir)/,$(common_sources) $(topology_sources) $(planner_sources))) \
		$(addprefix $(top_srcdir)/plugin/,model_layout.c model_machines.c slurm_env.c site.c gpu_bind.c) \
		-D_GNU_SOURCE -lm -o tests/fuzz/model_fuzzer
	$(MKDIR_P) tests/fuzz/work-model
	cp $(top_srcdir)/tests/fuzz/corpus-model/* tests/fuzz/work-model/
	$(SHELL) $(top_srcdir)/tests/fuzz/run.sh model tests/fuzz/model_fuzzer -max_total_time=$(FUZZ_SECONDS) \
		-max_len=1024 -dict=$(top_srcdir)/tests/fuzz/model.dict tests/fuzz/work-model
