/* test_step.c - core/step.h (the step files) and the training-step pattern
 * (chapter 07): the bytes every rank sends per kind equal the closed forms
 * to the byte, and under --sharing none the step's time is the sum of its
 * parts to the picosecond. */
#include <stdlib.h>
#include <math.h>
#include <string.h>

#include "core/step.h"
#include "tests/simcase.h"

cl_pattern_fn training_step;

#define MIB (1024.0 * 1024.0)

static step_desc load(const char *path)
{
    step_desc s;
    cl_diag d = {{0}};
    if (step_load(&s, path, &d))
        fail_msg("%s: %s", path, d.msg);
    return s;
}

static step_desc parse(const char *text)
{
    step_desc s;
    cl_diag d = {{0}};
    if (step_load_string(&s, "t.yaml", text, &d))
        fail_msg("%s", d.msg);
    return s;
}

/* Runs the step, no payload unless payload, into out[ranks]. */
static void run_step(step_desc *sd, bool payload, bool no_sharing, cl_step_rank *out, run *r)
{
    sd->step.out = out;
    cl_args a = {.step = &sd->step};
    setup s = {.no_payload = !payload, .no_sharing = no_sharing};
    run_pattern(r, training_step, step_ranks(&sd->step), 0, &a, &s);
    if (r->res.status)
        fail_msg("the step failed: %s (%s)", r->res.diag.msg, cl_errname(r->res.status));
}

/* The small example (configs/steps/small-8.yaml): h = 1024, s = 1024,
 * b = 1, bf16, 4 layers on pp 2 (2 a stage), tp 2, dp 2, 4 microbatches. */
static void test_small_sizes(void **state)
{
    (void)state;
    step_desc sd = load("configs/steps/small-8.yaml");
    const cl_step *t = &sd.step;
    assert_int_equal(step_ranks(t), 8);
    /* 12 h^2 x 2 bytes / tp 2 (Narayanan et al., SC 2021, section 5.1) */
    assert_int_equal(t->layer_bytes, 12 * 1024 * 1024);
    /* s b h x 2 bytes, between stages and per tensor-parallel all-reduce */
    assert_int_equal(t->act_bytes, 2 * 1024 * 1024);
    assert_int_equal(t->tp_bytes, 2 * 1024 * 1024);
    assert_int_equal(step_grad_bytes(t), 24 * 1024 * 1024);
}

/* The small example laid out otherwise (`step --sweep`): the same model
 * and global batch (4 microbatches x dp 2), the same compute in all. */
static void test_relayout(void **state)
{
    (void)state;
    step_desc sd = load("configs/steps/small-8.yaml");
    char why[160];
    step_desc a = sd;
    assert_int_equal(step_relayout(&a, 4, 1, 2, why, sizeof why), 0);
    assert_true(a.step.tp == 4 && a.step.dp == 1 && a.step.pp == 2);
    assert_int_equal(a.step.microbatches, 8);                /* 4 x 2 / 1 */
    assert_true(fabs(a.step.t_fwd - 0.5e-3) < 1e-15);        /* 1 ms x 2 / 4 */
    assert_true(fabs(a.step.t_bwd - 1e-3) < 1e-15);
    assert_int_equal(a.step.layer_bytes, 6 * 1024 * 1024);   /* 12 h^2 x 2 / 4 */
    assert_int_equal(a.step.act_bytes, 2 * 1024 * 1024);     /* s b h x 2: unchanged */
    /* A rank's compute a step, layers/pp x m x (F + B), is the same: the
     * same work over the same 8 ranks. */
    double before = step_stage_layers(&sd.step) * sd.step.microbatches *
                    (sd.step.t_fwd + sd.step.t_bwd),
           after = step_stage_layers(&a.step) * a.step.microbatches * (a.step.t_fwd + a.step.t_bwd);
    assert_true(fabs(before - 24e-3) < 1e-12 && fabs(after - 24e-3) < 1e-12);
    step_desc b = sd;
    assert_int_equal(step_relayout(&b, 1, 8, 1, why, sizeof why), 0);
    assert_true(b.step.microbatches == 1 && fabs(b.step.t_fwd - 2e-3) < 1e-15);
    step_desc c = sd;
    assert_int_equal(step_relayout(&c, 1, 1, 8, why, sizeof why), CL_EINVAL);
    assert_non_null(strstr(why, "pp 8 does not divide the 4 layers"));
    assert_int_equal(step_relayout(&c, 5, 1, 1, why, sizeof why), CL_EINVAL);
    assert_non_null(strstr(why, "tp 5 does not divide"));
    assert_int_equal(step_relayout(&c, 1, 3, 1, why, sizeof why), CL_EINVAL);
    assert_non_null(strstr(why, "dp 3 does not divide the step's 8 microbatches"));
    assert_memory_equal(&c, &sd, sizeof c); /* unchanged when refused */
}

/* Every rank's bytes per kind, counted by cl_sent_bytes on its groups,
 * against the closed forms worked out here by hand. */
static void test_small_volumes(void **state)
{
    (void)state;
    step_desc sd = load("configs/steps/small-8.yaml");
    cl_step_rank out[8];
    run r;
    run_step(&sd, false, false, out, &r);
    /* Megatron: 4 all-reduces of 2 MiB a layer a microbatch (2 forward,
     * 2 backward; Narayanan et al., SC 2021, section 2.3), a ring sending
     * 2(K-1)/K of it per rank (Patarasuk and Yuan, JPDC 2009), K = 2:
     * 4 x 2 layers x 4 microbatches x 2 MiB = 64 MiB. */
    double tp = 4 * 2 * 4 * (2.0 * 1 / 2) * 2 * MIB;
    /* Stage 0 sends 4 activations, stage 1 4 gradients, of 2 MiB. */
    double pp = 4 * 2 * MIB;
    /* Ring all-reduce of the stage's 24 MiB of gradients: 2(K-1)/K x 24 MiB. */
    double dp = 2.0 * 1 / 2 * 24 * MIB;
    assert_near(step_tp_volume(&sd.step), tp, 0);
    assert_near(step_pp_volume(&sd.step, 0), pp, 0);
    assert_near(step_pp_volume(&sd.step, 1), pp, 0);
    assert_near(step_dp_volume(&sd.step), dp, 0);
    for (int k = 0; k < 8; k++) {
        assert_near((double)out[k].tp, tp, 0);
        assert_near((double)out[k].pp, pp, 0);
        assert_near((double)out[k].dp, dp, 0);
        assert_near(out[k].compute, 2 * 4 * (1e-3 + 2e-3), 1e-15);
    }
    run_release(&r);
}

/* One ring all-reduce of n bytes over k ranks, every message alone:
 * 2(K-1)(a + n/(K B)) + (K-1) n g / K (chapter 04, allreduce_ring.c). */
static double ring(double n, double k, double a, double bw, double g)
{
    return 2 * (k - 1) * (a + n / (k * bw)) + (k - 1) * n * g / k;
}

/* Under --sharing none, GPipe on 2 stages with the stage's work F forward
 * and B backward a microbatch and S a pipeline message: stage 1 gets
 * microbatch i at (i + 1)(F + S) and sends its first gradient at
 * m (F + S) + F + B; stage 0 then gets gradient i at that + i (B + S) + S
 * and ends (m + 1)(F + B) + 2 m S after the start.  Then the gradients,
 * bucket by bucket.  Tier nvlink of configs/tiers.yaml: alpha 1 us,
 * 300 GB/s, reduce 680 GB/s. */
static void test_small_time_is_sum_of_parts(void **state)
{
    (void)state;
    step_desc sd = load("configs/steps/small-8.yaml");
    cl_step_rank out[8];
    run r;
    run_step(&sd, false, true, out, &r);
    double a = 1e-6, bw = 300e9, g = 1 / 680e9, m = 4, layers = 2;
    double tp = ring(2 * MIB, 2, a, bw, g);
    double f = layers * (1e-3 + 2 * tp), b = layers * (2e-3 + 2 * tp);
    double s = a + 2 * MIB / bw;
    double pipe = (m + 1) * (f + b) + 2 * m * s;
    double grads = 3 * ring(8 * MIB, 2, a, bw, g); /* 24 MiB in 3 buckets of 8 MiB */
    assert_near(out[0].pipe_end, pipe, 1e-12);
    assert_near(r.res.iter_time[0], pipe + grads, 1e-12);
    /* Every rank's step is its compute and its three waits, exactly. */
    for (int k = 0; k < 8; k++)
        assert_near(out[k].end, out[k].compute + out[k].tp_wait + out[k].pp_wait +
                    out[k].dp_wait, 1e-12);
    assert_near(out[0].end, pipe + grads, 1e-12);
    run_release(&r);
}

/* With payload the chapter 04 patterns check every reduction: a step that
 * sent the right byte counts but reduced nothing would fail here.  The
 * small example's layout (tp 2 x dp 2 x pp 2, 4 microbatches, GPipe) with
 * small tensors: its 64 MiB of bf16 all-reduces a rank took a minute to
 * add up, more under the sanitizers, and prove nothing more. */
static void test_small_with_payload(void **state)
{
    (void)state;
    step_desc sd = parse(
        "model: {layers: 4, hidden: 64, sequence: 32, microbatch_size: 1, dtype_bytes: 2,\n"
        "        forward: 1ms, backward: 2ms}\n"
        "layout: {tp: 2, dp: 2, pp: 2, microbatches: 4, schedule: gpipe, zero: 0,\n"
        "         bucket: 8KiB}\n");
    cl_step_rank out[8];
    run r;
    run_step(&sd, true, false, out, &r);
    run_release(&r);
}

static const char pp4[] =
    "model: {layers: 8, hidden: 256, sequence: 128, microbatch_size: 2, dtype_bytes: 4,\n"
    "        forward: 10us, backward: 20us}\n"
    "layout: {tp: 2, dp: 2, pp: 4, microbatches: 8, schedule: 1f1b, zero: 0, bucket: 1MiB}\n";

/* 1F1B on 4 stages: no deadlock, inner stages send both ways. */
static void test_1f1b_volumes(void **state)
{
    (void)state;
    step_desc sd = parse(pp4);
    cl_step_rank out[16];
    run r;
    run_step(&sd, false, false, out, &r);
    double act = 128 * 2 * 256 * 4; /* s b h x 4 bytes */
    for (int k = 0; k < 16; k++) {
        int stage = k / 4, ways = (stage > 0) + (stage < 3);
        assert_near((double)out[k].pp, ways * 8 * act, 0);
        assert_near((double)out[k].pp, step_pp_volume(&sd.step, stage), 0);
        /* 2 layers a stage x 8 microbatches x 4 all-reduces, K = 2 */
        assert_near((double)out[k].tp, 2 * 8 * 4 * act, 0);
        /* gradients: 2 layers x 12 h^2 x 4 bytes / tp 2, all-reduced, K = 2 */
        assert_near((double)out[k].dp, 2.0 * 12 * 256 * 256 * 4 / 2, 0);
    }
    run_release(&r);
}

/* ZeRO 3 over 4 data-parallel ranks: per layer per microbatch two
 * all-gathers and a reduce-scatter of the layer's parameters, (K-1)/K
 * each (Rajbhandari et al., SC 2020: 3 x the parameters against the
 * all-reduce's 2 x). */
static void test_zero3_volumes(void **state)
{
    (void)state;
    step_desc sd = parse(
        "model: {layers: 3, hidden: 64, sequence: 32, microbatch_size: 1, dtype_bytes: 2,\n"
        "        forward: 1us, backward: 2us}\n"
        "layout: {tp: 1, dp: 4, pp: 1, microbatches: 2, schedule: gpipe, zero: 3,\n"
        "         bucket: 1MiB}\n");
    cl_step_rank out[4];
    run r;
    run_step(&sd, true, false, out, &r);
    double layer = 12.0 * 64 * 64 * 2;
    for (int k = 0; k < 4; k++) {
        assert_near((double)out[k].dp, 3 * 3 * 2 * 3.0 / 4 * layer, 0);
        assert_near((double)out[k].dp, step_dp_volume(&sd.step), 0);
        assert_int_equal(out[k].tp, 0);
        assert_int_equal(out[k].pp, 0);
    }
    run_release(&r);
}

/* Two layers, no tensor or pipeline parallelism, two replicas, one
 * microbatch, a bucket a layer (12 h^2 x 2 bytes = 24 MiB).  Under
 * --sharing none on tier nvlink the backward's 2 ms a layer hides the
 * first bucket's ring (105 us) whole: with overlap the rank still adds
 * that ring's one reduction of 12 MiB to its own time, and what is
 * exposed is the second bucket, ready when the backward ends: its ring
 * (ZeRO 0), or its reduce-scatter and then both buckets' all-gathers of
 * the updated parameters (ZeRO 1 and 2).  Without overlap both rings
 * follow the backward. */
static const char two_buckets[] =
    "model: {layers: 2, hidden: 1024, sequence: 1024, microbatch_size: 1, dtype_bytes: 2,\n"
    "        forward: 1ms, backward: 2ms}\n"
    "layout: {tp: 1, dp: 2, pp: 1, microbatches: 1, schedule: gpipe, zero: %d,\n"
    "         bucket: 24MiB, overlap: %s}\n";

static void test_overlap_exposes_the_last_bucket(void **state)
{
    (void)state;
    double a = 1e-6, bw = 300e9, g = 1 / 680e9, compute = 2 * (1e-3 + 2e-3);
    double reduce = 12 * MIB * g, gather = a + 12 * MIB / bw, scatter = gather + reduce;
    assert_near(scatter + gather, ring(24 * MIB, 2, a, bw, g), 1e-15);
    for (int zero = 0; zero < 3; zero++)
        for (int overlap = 0; overlap < 2; overlap++) {
            char text[512];
            snprintf(text, sizeof text, two_buckets, zero, overlap ? "true" : "false");
            step_desc sd = parse(text);
            assert_int_equal(sd.step.overlap, overlap);
            cl_step_rank out[2];
            run r;
            run_step(&sd, false, true, out, &r);
            double pipe = compute + (overlap ? reduce : 0);
            double exposed = !overlap  ? 2 * (scatter + gather)
                             : zero == 0 ? scatter + gather
                                         : scatter + 2 * gather;
            for (int k = 0; k < 2; k++) {
                assert_near(out[k].pipe_end, pipe, 1e-12);
                /* the sums the first bucket made the rank do count as its
                 * data-parallel time: its step is compute and waits */
                assert_near(out[k].dp_wait, exposed + (overlap ? reduce : 0), 1e-12);
                assert_near(out[k].end, out[k].compute + out[k].dp_wait, 1e-12);
                assert_near(out[k].compute, compute, 1e-15);
                assert_near(out[k].tp_wait + out[k].pp_wait, 0, 0);
                /* ZeRO 1 and 2 send what ZeRO 0 does (Rajbhandari et al.,
                 * SC 2020, section 7.2.1): 2(K - 1)/K of the gradients */
                assert_near((double)out[k].dp, 48 * MIB, 0);
            }
            assert_near(r.res.iter_time[0], pipe + exposed, 1e-12);
            run_release(&r);
        }
}

/* ZeRO 1 and 2 over 4 replicas with payload: every bucket reduce-scattered,
 * then every bucket's parameters all-gathered, each element checked; the
 * bytes are the all-reduce's, 2(K - 1)/K of the gradients. */
static void test_zero12_with_payload(void **state)
{
    (void)state;
    for (int zero = 1; zero < 3; zero++)
        for (int overlap = 0; overlap < 2; overlap++) {
            char text[512];
            snprintf(text, sizeof text,
                     "model: {layers: 3, hidden: 64, sequence: 32, microbatch_size: 1,\n"
                     "        dtype_bytes: 2, forward: 10us, backward: 20us}\n"
                     "layout: {tp: 1, dp: 4, pp: 1, microbatches: 2, schedule: gpipe,\n"
                     "         zero: %d, bucket: 40KiB, overlap: %s}\n",
                     zero, overlap ? "true" : "false");
            step_desc sd = parse(text);
            cl_step_rank out[4];
            run r;
            run_step(&sd, true, false, out, &r);
            for (int k = 0; k < 4; k++) {
                assert_near((double)out[k].dp, 2 * 3.0 / 4 * 3 * 12 * 64 * 64 * 2, 0);
                assert_near((double)out[k].dp, step_dp_volume(&sd.step), 0);
            }
            run_release(&r);
        }
}

/* The most microbatches a stage holds: GPipe all m, 1F1B pp - stage
 * (Narayanan et al., SC 2021, section 2.2.1), as the ranks counted them. */
static void test_peak_microbatches(void **state)
{
    (void)state;
    for (int f1b1 = 0; f1b1 < 2; f1b1++) {
        step_desc sd = parse(pp4);
        sd.step.one_f_one_b = f1b1;
        cl_step_rank out[16];
        run r;
        run_step(&sd, false, false, out, &r);
        for (int k = 0; k < 16; k++) {
            int stage = k / 4;
            assert_int_equal(out[k].peak_microbatches, f1b1 ? 4 - stage : 8);
            assert_int_equal(out[k].peak_microbatches, step_peak_microbatches(&sd.step, stage));
        }
        run_release(&r);
    }
}

/* The small example's memory.  Activations (Korthikanti et al., MLSys
 * 2023, table 2, tensor parallel with selective recomputation): s b h
 * (10 + 24/t) = 1024 x 1024 x 22 = 22 MiB a layer, 2 layers a stage,
 * 4 microbatches held under GPipe: 176 MiB.  Model states (Rajbhandari
 * et al., SC 2020, section 5): psi = 2 layers x 12 h^2 / tp 2 = 12 Mi
 * parameters a rank, 16 psi = 192 MiB under ZeRO 0; ZeRO 1 4 psi + 12
 * psi / 2 = 120 MiB; ZeRO 2 2 psi + 14 psi / 2 = 108 MiB; ZeRO 3 96 MiB. */
static void test_small_memory(void **state)
{
    (void)state;
    step_desc sd = load("configs/steps/small-8.yaml");
    assert_near(step_activation_bytes(&sd.step, 0), 176 * MIB, 0);
    assert_near(step_activation_bytes(&sd.step, 1), 176 * MIB, 0);
    static const double states[] = {192, 120, 108, 96};
    for (int z = 0; z < 4; z++) {
        sd.step.zero = z;
        assert_near(step_model_state_bytes(&sd.step), states[z] * MIB, 0);
    }
    sd.step.one_f_one_b = true; /* stage 0 holds pp = 2 microbatches, stage 1 one */
    assert_near(step_activation_bytes(&sd.step, 0), 88 * MIB, 0);
    assert_near(step_activation_bytes(&sd.step, 1), 44 * MIB, 0);
}

/* The traffic between two ranks of the small example (tp 2 x dp 2 x pp
 * 2: rank r is tp rank r % 2, replica (r / 2) % 2, stage r / 4). */
static void test_kind_of(void **state)
{
    (void)state;
    step_desc sd = load("configs/steps/small-8.yaml");
    const cl_step *t = &sd.step;
    assert_int_equal(step_kind_of(t, 0, 1), STEP_TP); /* same stage and replica */
    assert_int_equal(step_kind_of(t, 5, 4), STEP_TP);
    assert_int_equal(step_kind_of(t, 0, 2), STEP_DP); /* same stage and tp rank */
    assert_int_equal(step_kind_of(t, 7, 5), STEP_DP);
    assert_int_equal(step_kind_of(t, 1, 5), STEP_PP); /* same replica and tp rank */
    assert_int_equal(step_kind_of(t, 6, 2), STEP_PP);
    assert_int_equal(step_kind_of(t, 0, 3), STEP_PROGRAM); /* no group of theirs */
    assert_int_equal(step_kind_of(t, 0, 5), STEP_PROGRAM);
    assert_int_equal(step_kind_of(t, 3, -1), STEP_PROGRAM);
}

/* flop_rate instead of forward and backward: a layer's forward is
 * 24 b s h^2 + 4 b s^2 h FLOPs (Narayanan et al., SC 2021, section 5.1),
 * for h = s = 1024, b = 1: 28 x 2^30 = 30,064,771,072, over tp 2 at
 * 100e12 FLOP/s 150.32385536 us; the backward twice that.  Laid out on
 * tp 4 (--sweep) a rank's share halves. */
static void test_flop_rate(void **state)
{
    (void)state;
    step_desc sd = parse(
        "model: {layers: 4, hidden: 1024, sequence: 1024, microbatch_size: 1, dtype_bytes: 2,\n"
        "        flop_rate: 100e12}\n"
        "layout: {tp: 2, dp: 2, pp: 2, microbatches: 4, schedule: gpipe, zero: 0,\n"
        "         bucket: 8MiB}\n");
    assert_near(step_layer_flops(&sd), 30064771072.0, 0);
    assert_near(sd.step.t_fwd, 150.32385536e-6, 1e-18);
    assert_near(sd.step.t_bwd, 2 * 150.32385536e-6, 1e-18);
    char why[128];
    assert_int_equal(step_relayout(&sd, 4, 1, 2, why, sizeof why), 0);
    assert_near(sd.step.t_fwd, 150.32385536e-6 / 2, 1e-18);
    static const struct {
        const char *model, *want;
    } bad[] = {
        {"{layers: 4, hidden: 64, sequence: 8, microbatch_size: 1, dtype_bytes: 2, "
         "forward: 1ms, flop_rate: 1e12}", "'forward' and 'flop_rate' both give the compute"},
        {"{layers: 4, hidden: 64, sequence: 8, microbatch_size: 1, dtype_bytes: 2, "
         "flop_rate: -5}", "'flop_rate' must be FLOP/s above 0"},
        {"{layers: 4, hidden: 64, sequence: 8, microbatch_size: 1, dtype_bytes: 2, "
         "forward: 1ms}", "backward"},
    };
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        char text[512];
        snprintf(text, sizeof text, "model: %s\n"
                 "layout: {tp: 1, dp: 1, pp: 1, microbatches: 1, schedule: gpipe, zero: 0, "
                 "bucket: 2}\n", bad[i].model);
        step_desc t;
        cl_diag d = {{0}};
        assert_int_not_equal(step_load_string(&t, "t.yaml", text, &d), 0);
        if (!strstr(d.msg, bad[i].want))
            fail_msg("case %zu: '%s' lacks '%s'", i, d.msg, bad[i].want);
    }
}

/* --scale 0.25 on the small example: h = s = 256, so a layer's FLOPs
 * (24 b s h^2 + 4 b s^2 h) shrink 64 times, 1 ms forward to 15.625 us;
 * s b h x 2 bytes = 128 KiB between stages, 12 h^2 x 2 / tp 2 = 768 KiB
 * of parameters a layer.  The layout stays. */
static void test_scale(void **state)
{
    (void)state;
    step_desc sd = load("configs/steps/small-8.yaml");
    char why[128];
    assert_int_equal(step_scale(&sd, 0.25, why, sizeof why), 0);
    assert_int_equal(sd.hidden, 256);
    assert_int_equal(sd.sequence, 256);
    assert_near(sd.step.t_fwd, 15.625e-6, 1e-18);
    assert_near(sd.step.t_bwd, 31.25e-6, 1e-18);
    assert_int_equal(sd.step.act_bytes, 128 * 1024);
    assert_int_equal(sd.step.layer_bytes, 768 * 1024);
    assert_int_equal(step_ranks(&sd.step), 8);
    assert_near(sd.scale, 0.25, 0);
    step_desc kept = sd;
    assert_int_equal(step_scale(&sd, 1.5, why, sizeof why), CL_EINVAL);
    assert_non_null(strstr(why, "at most 1"));
    assert_int_equal(sd.hidden, kept.hidden); /* unchanged on error */
}

#define LAYOUT \
    "layout: {tp: 1, dp: 1, pp: 1, microbatches: 1, schedule: gpipe, zero: 0, bucket: 2}\n"

/* Bad files: each refused with file:line:col, the key and the value. */
static void test_bad_files(void **state)
{
    (void)state;
    static const char model[] =
        "model: {layers: 4, hidden: 64, sequence: 8, microbatch_size: 1, dtype_bytes: 2,\n"
        "        forward: 1ms, backward: 2ms}\n";
    static const struct {
        const char *layout, *want;
    } cases[] = {
        {"layout: {tp: 1, dp: 1, pp: 1, microbatches: 1, schedule: gpipe, zero: 0, bucket: 1MiB, "
         "buckets: 2}", "t.yaml:3:"},
        {"layout: {tp: 1, dp: 1, pp: 3, microbatches: 1, schedule: gpipe, zero: 0, bucket: 1MiB}",
         "t.yaml:3:28: 'pp' must divide 'layers' (4), got '3'"},
        {"layout: {tp: 1, dp: 1, pp: 1, microbatches: 1, schedule: zigzag, zero: 0, bucket: 1MiB}",
         "t.yaml:3:58: 'schedule' must be gpipe or 1f1b, got 'zigzag'"},
        {"layout: {tp: 1, dp: 1, pp: 1, microbatches: 1, schedule: gpipe, zero: 4, bucket: 1MiB}",
         "'zero' must be in 0..3, got '4'"},
        {"layout: {tp: 1, dp: 1, pp: 1, microbatches: 1, schedule: gpipe, zero: 0, bucket: 1MiB, "
         "overlap: yes}", "t.yaml:3:97: 'overlap' must be true or false, got 'yes'"},
        {"layout: {tp: 1, dp: 1, pp: 1, microbatches: 1, schedule: gpipe, zero: 3, bucket: 1MiB, "
         "overlap: true}", "'overlap' hides gradient buckets (ZeRO 0 to 2)"},
        {"layout: {tp: 1, dp: 1, pp: 1, microbatches: 1, schedule: gpipe, zero: 0, bucket: 3}",
         "'bucket' must be a whole number of 2-byte elements, got '3' bytes"},
        {"layout: {tp: 1, dp: 1, pp: 1, microbatches: 0, schedule: gpipe, zero: 0, bucket: 2}",
         "'microbatches' must be in 1..65536, got '0'"},
        {"layout: {tp: 1, dp: 1, pp: 1, schedule: gpipe, zero: 0, bucket: 2}", "microbatches"},
        {"layout: {tp: 1, dp: 1, pp: 1, microbatches: 1, schedule: gpipe, zero: 0, bucket: 2 "
         "parsecs}", "t.yaml:3:"},
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        char text[512];
        snprintf(text, sizeof text, "%s%s\n", model, cases[i].layout);
        step_desc sd = {.hidden = -1};
        cl_diag d = {{0}};
        assert_int_not_equal(step_load_string(&sd, "t.yaml", text, &d), 0);
        assert_int_equal(sd.hidden, -1); /* unchanged on error */
        if (!strstr(d.msg, cases[i].want))
            fail_msg("case %zu: '%s' lacks '%s'", i, d.msg, cases[i].want);
    }
    /* An element size that is no type, and a time that is no time. */
    step_desc sd;
    cl_diag d = {{0}};
    assert_int_not_equal(
        step_load_string(&sd, "t.yaml",
                         "model: {layers: 4, hidden: 64, sequence: 8, microbatch_size: 1,\n"
                         "        dtype_bytes: 3, forward: 1ms, backward: 2ms}\n" LAYOUT, &d), 0);
    assert_non_null(strstr(d.msg, "t.yaml:2:22: 'dtype_bytes' must be 2 (bf16), 4 (f32) or 8 "
                                  "(f64), got '3'"));
    assert_int_not_equal(
        step_load_string(&sd, "t.yaml",
                         "model: {layers: 4, hidden: 64, sequence: 8, microbatch_size: 1,\n"
                         "        dtype_bytes: 2, forward: 1 lightyear, backward: 2ms}\n" LAYOUT,
                         &d), 0);
    assert_non_null(strstr(d.msg, "t.yaml:2:34: 'forward'"));
    assert_non_null(strstr(d.msg, "1 lightyear"));
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_small_sizes),
        cmocka_unit_test(test_relayout),
        cmocka_unit_test(test_small_volumes),
        cmocka_unit_test(test_small_time_is_sum_of_parts),
        cmocka_unit_test(test_small_with_payload),
        cmocka_unit_test(test_1f1b_volumes),
        cmocka_unit_test(test_zero3_volumes),
        cmocka_unit_test(test_overlap_exposes_the_last_bucket),
        cmocka_unit_test(test_zero12_with_payload),
        cmocka_unit_test(test_peak_microbatches),
        cmocka_unit_test(test_small_memory),
        cmocka_unit_test(test_kind_of),
        cmocka_unit_test(test_flop_rate),
        cmocka_unit_test(test_scale),
        cmocka_unit_test(test_bad_files),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
