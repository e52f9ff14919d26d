/*
 * step.h - a training step's description (the files of configs/steps): the
 * model, its layout on the ranks, and the sizes and communication volumes
 * that follow from them, for the training-step pattern (chapter 07) and
 * `commlab step`.
 *
 * A step file has two mappings, every key required:
 *
 *   model:  layers, hidden, sequence, microbatch_size, dtype_bytes,
 *           forward, backward (seconds of compute per layer per
 *           microbatch on one rank, a time: "1.5ms"), or instead of
 *           those two flop_rate (FLOP/s a rank sustains, a number:
 *           125e12), from which they follow (step_layer_flops)
 *   layout: tp, dp, pp, microbatches, schedule (gpipe | 1f1b),
 *           zero (0 to 3), bucket (a size: "25MiB"); and, the one
 *           optional key, overlap (true | false, false when left out:
 *           the buckets start during the last backward, ZeRO 0 to 2)
 *
 * The sizes (Narayanan et al., "Efficient Large-Scale Language Model
 * Training on GPU Clusters Using Megatron-LM", SC 2021):
 *   parameters of a layer      12 h^2 (attention 4 h^2, MLP 8 h^2; biases
 *                              and layer norms left out), of which one
 *                              tensor-parallel rank holds 1/tp;
 *   activations between stages s b h per microbatch;
 *   tensor parallelism         2 all-reduces of s b h in each layer's
 *                              forward and 2 in its backward, per microbatch.
 * Times with dtype_bytes make bytes.  Owned by the caller; nothing here
 * keeps state.
 */
#ifndef CL_STEP_H
#define CL_STEP_H

#include <stdint.h>

#include "commlab.h"
#include "core/diag.h"

/* A step as read, and what cl_step does not carry. */
typedef struct step_desc {
    cl_step step;     /* what the pattern reads (step.out left NULL) */
    long hidden;      /* h: the model's hidden size */
    long sequence;    /* s: tokens per sequence */
    long mbs;         /* b: sequences per microbatch */
    double flop_rate; /* FLOP/s a rank sustains when the file gives it (0:
                         the file gives forward and backward instead) */
    double scale;     /* 1, or what step_scale made hidden and sequence of the file's */
    char path[256];   /* the file, for messages */
} step_desc;

/* Reads and checks the step file path into *s.  On error (CL_ENOENT,
 * CL_EIO, CL_EPARSE, CL_ECONFIG, CL_ERANGE, CL_ENOMEM) d names the file,
 * line and column, the key and the bad value, and *s is unchanged. */
int step_load(step_desc *s, const char *path, cl_diag *d);
/* The same from text in memory; name stands for the file in messages. */
int step_load_string(step_desc *s, const char *name, const char *text, cl_diag *d);

/* The same model and global batch laid out as tp x dp x pp instead
 * (`commlab step --sweep`): a layer's compute on one rank scales with the
 * file's tp over tp (the same work shared by more or fewer ranks), the
 * microbatches per replica with the file's dp over dp (the same
 * sequences a step), the parameters a rank holds with 1/tp.  0, or
 * CL_EINVAL with why (len bytes) when the model cannot be so laid out:
 * pp does not divide the layers, tp the 12 h^2 parameters of a layer, or
 * dp the step's m x dp microbatches; s is unchanged then. */
int step_relayout(step_desc *s, int tp, int dp, int pp, char *why, size_t len);

/* The traffic between world ranks `rank` and `peer` of step s:
 * STEP_TP, STEP_PP or STEP_DP when both are in one group of that kind,
 * else STEP_PROGRAM (a peer of -1: compute, waits, iterations).  Cannot
 * fail. */
enum { STEP_PROGRAM, STEP_TP, STEP_PP, STEP_DP, STEP_KINDS };
int step_kind_of(const cl_step *s, int rank, int peer);

/* The FLOPs of one layer's forward on one microbatch, all tp ranks
 * together: 24 b s h^2 + 4 b s^2 h, its matrix products (Narayanan et
 * al., SC 2021, section 5.1, from which their equation 3 follows; the
 * backward is twice the forward).  With flop_rate a rank's forward takes
 * that / tp / flop_rate seconds.  Cannot fail. */
double step_layer_flops(const step_desc *s);

/* The same layout with a smaller model, for a measured run on a few
 * cores (`commlab step --scale F`): hidden and sequence times f (0 < f
 * <= 1, rounded to whole numbers, at least 1), the compute times with
 * the layer's FLOPs (step_layer_flops); the bytes follow (s b h between
 * stages and per all-reduce, 12 h^2 a layer).  0, or CL_EINVAL with why
 * (len bytes) when f is out of range or tp no longer divides a layer's
 * 12 h^2 parameters; s is unchanged then. */
int step_scale(step_desc *s, double f, char *why, size_t len);

/* Ranks the layout needs: tp x dp x pp.  Cannot fail. */
int step_ranks(const cl_step *s);
/* Layers one pipeline stage holds: layers / pp.  Cannot fail. */
int step_stage_layers(const cl_step *s);
/* Bytes of gradients one rank holds: its stage's layers x layer_bytes.
 * Cannot fail. */
uint64_t step_grad_bytes(const cl_step *s);

/* ---- closed forms, bytes one rank sends per step (cannot fail) ----
 * A ring all-reduce of n bytes over K ranks sends 2(K - 1) n / K per rank,
 * an all-gather or reduce-scatter (K - 1) n / K (Patarasuk and Yuan, JPDC
 * 2009); exact when K divides n into whole elements. */

/* Tensor parallelism: 4 ring all-reduces of tp_bytes per layer of the
 * stage per microbatch. */
double step_tp_volume(const cl_step *s);
/* Pipeline: activations forward, gradients back, act_bytes each per
 * microbatch, for the rank of stage `stage` (0 .. pp - 1). */
double step_pp_volume(const cl_step *s, int stage);
/* Data parallelism: ZeRO 0, a ring all-reduce of the gradients (in
 * buckets: the sum is the same); ZeRO 1 and 2 the same bytes, as a
 * reduce-scatter of the gradients and an all-gather of the updated
 * parameters; ZeRO 3, per layer per microbatch an all-gather of the
 * parameters forward and backward and a reduce-scatter of the gradients
 * (Rajbhandari et al., SC 2020, section 7: 3 x the parameters, against
 * 2 x for the all-reduce, per microbatch). */
double step_dp_volume(const cl_step *s);

/* ---- memory (cannot fail) ---- */

/* The most microbatches stage `stage` holds activations for at once:
 * GPipe all m, 1F1B min(pp - stage, m) (Narayanan et al., SC 2021,
 * section 2.2.1). */
int step_peak_microbatches(const cl_step *s, int stage);
/* Bytes of activations stage `stage` holds at its peak: the microbatches
 * above x its layers x s b h (10 + 24 / tp) bytes a layer, Korthikanti
 * et al., "Reducing Activation Recomputation in Large Transformer
 * Models", MLSys 2023, table 2: tensor parallelism with selective
 * recomputation, counted for 2-byte activations (other element sizes
 * scaled with dtype_bytes / 2). */
double step_activation_bytes(const cl_step *s, int stage);
/* Bytes of model states a rank holds: parameters, gradients and Adam's
 * states in mixed precision, 2 + 2 + 12 bytes a parameter for the psi
 * parameters of its stage's layers / tp, split over the dp replicas by
 * ZeRO's stage: 16 psi, 4 psi + 12 psi / dp, 2 psi + 14 psi / dp,
 * 16 psi / dp (Rajbhandari et al., SC 2020, section 5 and figure 1). */
double step_model_state_bytes(const cl_step *s);

/* The fraction of a pipeline's time its stages idle when messages are
 * free and stages equal: (pp - 1) / (m + pp - 1), GPipe and 1F1B alike
 * (Narayanan et al., SC 2021, section 2.2).  Cannot fail. */
double step_bubble_fraction(const cl_step *s);

#endif
