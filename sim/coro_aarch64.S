/*
 * coro_aarch64.S - context switch for coroutine ranks, AArch64 (AAPCS64).
 *
 * void *sim__coro_switch(void **from_sp, void *to_sp, void *transfer);
 *   Store the callee-saved registers (x19-x28, x29 fp, x30 lr, d8-d15) and
 *   fpcr in a 176-byte frame on the current stack, store sp in *from_sp,
 *   load to_sp, reload the same frame from there and return (to its x30)
 *   with x0 = transfer.  Frame, in 8-byte words from sp: x19..x28 [0..9],
 *   x29 [10], x30 [11], d8..d15 [12..19], fpcr [20], pad [21].  coro.c's
 *   make_frame builds it for a new coroutine with x30 = sim__coro_boot.
 *
 * sim__coro_boot: first code of a new coroutine; x0 = the sched (transfer
 *   of the first resume), x19 = co, x20 = fn, x21 = arg.  Calls
 *   sim__coro_main(sched, co, fn, arg), which never returns.
 */
#if defined(__aarch64__) && defined(__ELF__)

    .text
    .globl  sim__coro_switch
    .hidden sim__coro_switch
    .type   sim__coro_switch, %function
    .p2align 4
sim__coro_switch:
    .cfi_startproc
    sub     sp, sp, #176
    stp     x19, x20, [sp, #0]
    stp     x21, x22, [sp, #16]
    stp     x23, x24, [sp, #32]
    stp     x25, x26, [sp, #48]
    stp     x27, x28, [sp, #64]
    stp     x29, x30, [sp, #80]
    stp     d8, d9, [sp, #96]
    stp     d10, d11, [sp, #112]
    stp     d12, d13, [sp, #128]
    stp     d14, d15, [sp, #144]
    mrs     x9, fpcr
    str     x9, [sp, #160]
    mov     x9, sp
    str     x9, [x0]
    mov     sp, x1
    ldp     x19, x20, [sp, #0]
    ldp     x21, x22, [sp, #16]
    ldp     x23, x24, [sp, #32]
    ldp     x25, x26, [sp, #48]
    ldp     x27, x28, [sp, #64]
    ldp     x29, x30, [sp, #80]
    ldp     d8, d9, [sp, #96]
    ldp     d10, d11, [sp, #112]
    ldp     d12, d13, [sp, #128]
    ldp     d14, d15, [sp, #144]
    ldr     x9, [sp, #160]
    msr     fpcr, x9
    add     sp, sp, #176
    mov     x0, x2
    ret
    .cfi_endproc
    .size   sim__coro_switch, .-sim__coro_switch

    .globl  sim__coro_boot
    .hidden sim__coro_boot
    .type   sim__coro_boot, %function
    .p2align 4
sim__coro_boot:
    .cfi_startproc
    .cfi_undefined x30          /* outermost frame: unwinders stop here */
    mov     x1, x19
    mov     x2, x20
    mov     x3, x21
    bl      sim__coro_main
    brk     #0
    .cfi_endproc
    .size   sim__coro_boot, .-sim__coro_boot

#endif

#if defined(__ELF__)
    .section .note.GNU-stack,"",%progbits
#endif
