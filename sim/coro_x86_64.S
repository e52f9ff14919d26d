/*
 * coro_x86_64.S - context switch for coroutine ranks, x86-64 System V.
 *
 * void *sim__coro_switch(void **from_sp, void *to_sp, void *transfer);
 *   Push the callee-saved registers (rbp, rbx, r12-r15) and the FP control
 *   state (mxcsr, x87 control word) on the current stack, store rsp in
 *   *from_sp, load to_sp, pop the same layout from there and return into
 *   the other context with rax = transfer.  Layout at the saved rsp, low to
 *   high: mxcsr (4 bytes), x87 cw (2), pad (2), r15, r14, r13, r12, rbx,
 *   rbp, return address.  coro.c's make_frame builds this layout for a new
 *   coroutine with the return address pointing at sim__coro_boot.
 *
 * sim__coro_boot: first code of a new coroutine; rax = the sched (transfer
 *   of the first resume), r12 = co, r13 = fn, r14 = arg.  Calls
 *   sim__coro_main(sched, co, fn, arg), which never returns.
 */
#if defined(__x86_64__) && defined(__ELF__)

    .text
    .globl  sim__coro_switch
    .hidden sim__coro_switch
    .type   sim__coro_switch, @function
    .p2align 4
sim__coro_switch:
    .cfi_startproc
    pushq   %rbp
    pushq   %rbx
    pushq   %r12
    pushq   %r13
    pushq   %r14
    pushq   %r15
    subq    $8, %rsp
    stmxcsr (%rsp)
    fnstcw  4(%rsp)
    movq    %rsp, (%rdi)
    movq    %rsi, %rsp
    ldmxcsr (%rsp)
    fldcw   4(%rsp)
    addq    $8, %rsp
    popq    %r15
    popq    %r14
    popq    %r13
    popq    %r12
    popq    %rbx
    popq    %rbp
    movq    %rdx, %rax
    ret
    .cfi_endproc
    .size   sim__coro_switch, .-sim__coro_switch

    .globl  sim__coro_boot
    .hidden sim__coro_boot
    .type   sim__coro_boot, @function
    .p2align 4
sim__coro_boot:
    .cfi_startproc
    .cfi_undefined rip          /* outermost frame: unwinders stop here */
    movq    %rax, %rdi
    movq    %r12, %rsi
    movq    %r13, %rdx
    movq    %r14, %rcx
    andq    $-16, %rsp
    call    sim__coro_main
    ud2
    .cfi_endproc
    .size   sim__coro_boot, .-sim__coro_boot

#endif

#if defined(__ELF__)
    .section .note.GNU-stack,"",@progbits
#endif
