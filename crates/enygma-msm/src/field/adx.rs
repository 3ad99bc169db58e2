//! The products of [`super`] in x86-64 assembly: MULX (BMI2) multiplies without touching the
//! flags, so two carry chains run at once, one on the carry flag (ADCX) and one on the overflow
//! flag (ADOX), as in gnark-crypto's and rapidsnark's assembly. The operands are read from
//! memory and the results stay in registers, so a batch of bucket additions inlines every
//! product (arkworks' assembly product is a call that returns its result through memory).
//! Compiled where BMI2 and ADX are enabled at build time (`.cargo/config.toml`), as arkworks'
//! own assembly is; the portable products in [`super`] are the same arithmetic, and the tests
//! hold both to arkworks.
//!
//! Each function's rows follow one pattern: load a limb of `b` into RDX, clear both flags,
//! then per limb of `a` one MULX whose low word goes into the row's limb through ADOX and whose
//! high word into the next limb through ADCX; the two carries left at the end of a row go
//! into its top limb.

/// A modulus' four limbs and `−p⁻¹ mod 2⁶⁴`, in the order the assembly reads them.
pub(super) type Modulus = [u64; 5];

/// `a·b·2⁻²⁵⁶ mod p`, below `2p`: CIOS with the no-carry shortcut (the caller checks the
/// modulus allows it). Each round adds `a·b_i` to the running value `t` (top limb `A`), then
/// adds the multiple `m·p` of the modulus that clears `t`'s low limb and shifts `t` down a limb.
/// The shift moves no register: each limb's sum is left where it was computed and the roles of
/// the seven registers `x0..x6` rotate from round to round (the result ends in `x6, x4, x5,
/// x0`), which saves the 28 moves of a fixed assignment.
#[inline(always)]
pub(super) fn mont_mul(a: &[u64; 4], b: &[u64; 4], modulus: &Modulus) -> [u64; 4] {
    let (x0, x4, x5, x6): (u64, u64, u64, u64);
    // SAFETY: the assembly reads the 4 limbs of `a` and of `b` and the 5 words of `modulus`,
    // all behind references, writes only its register operands, and touches no stack.
    unsafe {
        std::arch::asm!(
            // (A, t) = a·b0
            "mov rdx, qword ptr [{b}]",
            "xor {lo:e}, {lo:e}",
            "mulx {x1}, {x0}, qword ptr [{a}]",
            "mulx {x2}, {lo}, qword ptr [{a} + 8]",
            "adox {x1}, {lo}",
            "mulx {x3}, {lo}, qword ptr [{a} + 16]",
            "adox {x2}, {lo}",
            "mulx {x4}, {lo}, qword ptr [{a} + 24]",
            "adox {x3}, {lo}",
            "mov {lo:e}, 0",
            "adox {x4}, {lo}",
            // m = t0·(−p⁻¹); t = (t + m·p) / 2⁶⁴, its top limb C + A
            "mov rdx, {x0}",
            "mulx {x5}, rdx, qword ptr [{p} + 32]",
            "xor {lo:e}, {lo:e}",
            "mulx {x5}, {lo}, qword ptr [{p}]",
            "adcx {lo}, {x0}",
            "mulx {x6}, {lo}, qword ptr [{p} + 8]",
            "adcx {x1}, {x5}",
            "adox {x1}, {lo}",
            "mulx {x5}, {lo}, qword ptr [{p} + 16]",
            "adcx {x2}, {x6}",
            "adox {x2}, {lo}",
            "mulx {x6}, {lo}, qword ptr [{p} + 24]",
            "adcx {x3}, {x5}",
            "adox {x3}, {lo}",
            "mov {lo:e}, 0",
            "adcx {x6}, {lo}",
            "adox {x6}, {x4}",
            // (A, t) = t + a·b1
            "mov rdx, qword ptr [{b} + 8]",
            "xor {lo:e}, {lo:e}",
            "mulx {x5}, {lo}, qword ptr [{a}]",
            "adox {x1}, {lo}",
            "adcx {x2}, {x5}",
            "mulx {x5}, {lo}, qword ptr [{a} + 8]",
            "adox {x2}, {lo}",
            "adcx {x3}, {x5}",
            "mulx {x5}, {lo}, qword ptr [{a} + 16]",
            "adox {x3}, {lo}",
            "adcx {x6}, {x5}",
            "mulx {x5}, {lo}, qword ptr [{a} + 24]",
            "adox {x6}, {lo}",
            "mov {lo:e}, 0",
            "adcx {x5}, {lo}",
            "adox {x5}, {lo}",
            // m = t0·(−p⁻¹); t = (t + m·p) / 2⁶⁴, its top limb C + A
            "mov rdx, {x1}",
            "mulx {x0}, rdx, qword ptr [{p} + 32]",
            "xor {lo:e}, {lo:e}",
            "mulx {x0}, {lo}, qword ptr [{p}]",
            "adcx {lo}, {x1}",
            "mulx {x4}, {lo}, qword ptr [{p} + 8]",
            "adcx {x2}, {x0}",
            "adox {x2}, {lo}",
            "mulx {x0}, {lo}, qword ptr [{p} + 16]",
            "adcx {x3}, {x4}",
            "adox {x3}, {lo}",
            "mulx {x4}, {lo}, qword ptr [{p} + 24]",
            "adcx {x6}, {x0}",
            "adox {x6}, {lo}",
            "mov {lo:e}, 0",
            "adcx {x4}, {lo}",
            "adox {x4}, {x5}",
            // (A, t) = t + a·b2
            "mov rdx, qword ptr [{b} + 16]",
            "xor {lo:e}, {lo:e}",
            "mulx {x0}, {lo}, qword ptr [{a}]",
            "adox {x2}, {lo}",
            "adcx {x3}, {x0}",
            "mulx {x0}, {lo}, qword ptr [{a} + 8]",
            "adox {x3}, {lo}",
            "adcx {x6}, {x0}",
            "mulx {x0}, {lo}, qword ptr [{a} + 16]",
            "adox {x6}, {lo}",
            "adcx {x4}, {x0}",
            "mulx {x0}, {lo}, qword ptr [{a} + 24]",
            "adox {x4}, {lo}",
            "mov {lo:e}, 0",
            "adcx {x0}, {lo}",
            "adox {x0}, {lo}",
            // m = t0·(−p⁻¹); t = (t + m·p) / 2⁶⁴, its top limb C + A
            "mov rdx, {x2}",
            "mulx {x1}, rdx, qword ptr [{p} + 32]",
            "xor {lo:e}, {lo:e}",
            "mulx {x1}, {lo}, qword ptr [{p}]",
            "adcx {lo}, {x2}",
            "mulx {x5}, {lo}, qword ptr [{p} + 8]",
            "adcx {x3}, {x1}",
            "adox {x3}, {lo}",
            "mulx {x1}, {lo}, qword ptr [{p} + 16]",
            "adcx {x6}, {x5}",
            "adox {x6}, {lo}",
            "mulx {x5}, {lo}, qword ptr [{p} + 24]",
            "adcx {x4}, {x1}",
            "adox {x4}, {lo}",
            "mov {lo:e}, 0",
            "adcx {x5}, {lo}",
            "adox {x5}, {x0}",
            // (A, t) = t + a·b3
            "mov rdx, qword ptr [{b} + 24]",
            "xor {lo:e}, {lo:e}",
            "mulx {x1}, {lo}, qword ptr [{a}]",
            "adox {x3}, {lo}",
            "adcx {x6}, {x1}",
            "mulx {x1}, {lo}, qword ptr [{a} + 8]",
            "adox {x6}, {lo}",
            "adcx {x4}, {x1}",
            "mulx {x1}, {lo}, qword ptr [{a} + 16]",
            "adox {x4}, {lo}",
            "adcx {x5}, {x1}",
            "mulx {x1}, {lo}, qword ptr [{a} + 24]",
            "adox {x5}, {lo}",
            "mov {lo:e}, 0",
            "adcx {x1}, {lo}",
            "adox {x1}, {lo}",
            // m = t0·(−p⁻¹); t = (t + m·p) / 2⁶⁴, its top limb C + A
            "mov rdx, {x3}",
            "mulx {x2}, rdx, qword ptr [{p} + 32]",
            "xor {lo:e}, {lo:e}",
            "mulx {x2}, {lo}, qword ptr [{p}]",
            "adcx {lo}, {x3}",
            "mulx {x0}, {lo}, qword ptr [{p} + 8]",
            "adcx {x6}, {x2}",
            "adox {x6}, {lo}",
            "mulx {x2}, {lo}, qword ptr [{p} + 16]",
            "adcx {x4}, {x0}",
            "adox {x4}, {lo}",
            "mulx {x0}, {lo}, qword ptr [{p} + 24]",
            "adcx {x5}, {x2}",
            "adox {x5}, {lo}",
            "mov {lo:e}, 0",
            "adcx {x0}, {lo}",
            "adox {x0}, {x1}",
            a = in(reg) a.as_ptr(),
            b = in(reg) b.as_ptr(),
            p = in(reg) modulus.as_ptr(),
            x0 = out(reg) x0, x1 = out(reg) _, x2 = out(reg) _, x3 = out(reg) _,
            x4 = out(reg) x4, x5 = out(reg) x5, x6 = out(reg) x6, lo = out(reg) _,
            out("rdx") _,
            options(pure, readonly, nostack),
        );
    }
    [x6, x4, x5, x0]
}

/// `a·b`, all 512 bits (schoolbook, a row per limb of `b`).
#[inline(always)]
pub(super) fn wide_product(a: &[u64; 4], b: &[u64; 4]) -> [u64; 8] {
    let (r0, r1, r2, r3, r4, r5, r6, r7): (u64, u64, u64, u64, u64, u64, u64, u64);
    // SAFETY: the assembly reads the 4 limbs of `a` and of `b` behind references, writes only
    // its register operands, and touches no stack.
    unsafe {
        std::arch::asm!(
            // r[0..5] = a·b0
            "mov rdx, qword ptr [{b}]",
            "xor {lo:e}, {lo:e}",
            "mulx {r1}, {r0}, qword ptr [{a}]",
            "mulx {r2}, {lo}, qword ptr [{a} + 8]",
            "adox {r1}, {lo}",
            "mulx {r3}, {lo}, qword ptr [{a} + 16]",
            "adox {r2}, {lo}",
            "mulx {r4}, {lo}, qword ptr [{a} + 24]",
            "adox {r3}, {lo}",
            "mov {lo:e}, 0",
            "adox {r4}, {lo}",
            // r[1..6] += a·b1
            "mov rdx, qword ptr [{b} + 8]",
            "xor {lo:e}, {lo:e}",
            "mulx {hi}, {lo}, qword ptr [{a}]",
            "adox {r1}, {lo}",
            "adcx {r2}, {hi}",
            "mulx {hi}, {lo}, qword ptr [{a} + 8]",
            "adox {r2}, {lo}",
            "adcx {r3}, {hi}",
            "mulx {hi}, {lo}, qword ptr [{a} + 16]",
            "adox {r3}, {lo}",
            "adcx {r4}, {hi}",
            "mulx {hi}, {lo}, qword ptr [{a} + 24]",
            "adox {r4}, {lo}",
            "mov {r5:e}, 0",
            "adcx {r5}, {hi}",
            "mov {lo:e}, 0",
            "adox {r5}, {lo}",
            // r[2..7] += a·b2
            "mov rdx, qword ptr [{b} + 16]",
            "xor {lo:e}, {lo:e}",
            "mulx {hi}, {lo}, qword ptr [{a}]",
            "adox {r2}, {lo}",
            "adcx {r3}, {hi}",
            "mulx {hi}, {lo}, qword ptr [{a} + 8]",
            "adox {r3}, {lo}",
            "adcx {r4}, {hi}",
            "mulx {hi}, {lo}, qword ptr [{a} + 16]",
            "adox {r4}, {lo}",
            "adcx {r5}, {hi}",
            "mulx {hi}, {lo}, qword ptr [{a} + 24]",
            "adox {r5}, {lo}",
            "mov {r6:e}, 0",
            "adcx {r6}, {hi}",
            "mov {lo:e}, 0",
            "adox {r6}, {lo}",
            // r[3..8] += a·b3
            "mov rdx, qword ptr [{b} + 24]",
            "xor {lo:e}, {lo:e}",
            "mulx {hi}, {lo}, qword ptr [{a}]",
            "adox {r3}, {lo}",
            "adcx {r4}, {hi}",
            "mulx {hi}, {lo}, qword ptr [{a} + 8]",
            "adox {r4}, {lo}",
            "adcx {r5}, {hi}",
            "mulx {hi}, {lo}, qword ptr [{a} + 16]",
            "adox {r5}, {lo}",
            "adcx {r6}, {hi}",
            "mulx {hi}, {lo}, qword ptr [{a} + 24]",
            "adox {r6}, {lo}",
            "mov {r7:e}, 0",
            "adcx {r7}, {hi}",
            "mov {lo:e}, 0",
            "adox {r7}, {lo}",
            a = in(reg) a.as_ptr(),
            b = in(reg) b.as_ptr(),
            r0 = out(reg) r0, r1 = out(reg) r1, r2 = out(reg) r2, r3 = out(reg) r3,
            r4 = out(reg) r4, r5 = out(reg) r5, r6 = out(reg) r6, r7 = out(reg) r7,
            lo = out(reg) _, hi = out(reg) _,
            out("rdx") _,
            options(pure, readonly, nostack),
        );
    }
    [r0, r1, r2, r3, r4, r5, r6, r7]
}

/// `t·2⁻²⁵⁶ mod p`, below `2p`, for `t < p·2²⁵⁶`: Montgomery's reduction a limb at a time;
/// round `i` adds the multiple `m·p·2^(64i)` that clears limb `i`, and the carry out of limb
/// `i + 4` goes into the next round's top limb (register `w`, once the input is loaded).
#[inline(always)]
pub(super) fn reduce(t: &[u64; 8], modulus: &Modulus) -> [u64; 4] {
    let (t4, t5, t6, t7): (u64, u64, u64, u64);
    // SAFETY: the assembly reads the 8 limbs of `t` and the 5 words of `modulus` behind
    // references, writes only its register operands, and touches no stack.
    unsafe {
        std::arch::asm!(
            "mov {t0}, qword ptr [{w} + 0]",
            "mov {t1}, qword ptr [{w} + 8]",
            "mov {t2}, qword ptr [{w} + 16]",
            "mov {t3}, qword ptr [{w} + 24]",
            "mov {t4}, qword ptr [{w} + 32]",
            "mov {t5}, qword ptr [{w} + 40]",
            "mov {t6}, qword ptr [{w} + 48]",
            "mov {t7}, qword ptr [{w} + 56]",
            "xor {w:e}, {w:e}",
            // m = t0·(−p⁻¹); t += m·p·2^0, the carry out of t4 kept in w
            "mov rdx, {t0}",
            "mulx {hi}, rdx, qword ptr [{p} + 32]",
            "xor {lo:e}, {lo:e}",
            "mulx {hi}, {lo}, qword ptr [{p}]",
            "adox {t0}, {lo}",
            "adcx {t1}, {hi}",
            "mulx {hi}, {lo}, qword ptr [{p} + 8]",
            "adox {t1}, {lo}",
            "adcx {t2}, {hi}",
            "mulx {hi}, {lo}, qword ptr [{p} + 16]",
            "adox {t2}, {lo}",
            "adcx {t3}, {hi}",
            "mulx {hi}, {lo}, qword ptr [{p} + 24]",
            "adox {t3}, {lo}",
            "adcx {t4}, {hi}",
            "adox {t4}, {w}",
            "mov {w:e}, 0",
            "mov {lo:e}, 0",
            "adcx {w}, {lo}",
            "adox {w}, {lo}",
            // m = t1·(−p⁻¹); t += m·p·2^64, the carry out of t5 kept in w
            "mov rdx, {t1}",
            "mulx {hi}, rdx, qword ptr [{p} + 32]",
            "xor {lo:e}, {lo:e}",
            "mulx {hi}, {lo}, qword ptr [{p}]",
            "adox {t1}, {lo}",
            "adcx {t2}, {hi}",
            "mulx {hi}, {lo}, qword ptr [{p} + 8]",
            "adox {t2}, {lo}",
            "adcx {t3}, {hi}",
            "mulx {hi}, {lo}, qword ptr [{p} + 16]",
            "adox {t3}, {lo}",
            "adcx {t4}, {hi}",
            "mulx {hi}, {lo}, qword ptr [{p} + 24]",
            "adox {t4}, {lo}",
            "adcx {t5}, {hi}",
            "adox {t5}, {w}",
            "mov {w:e}, 0",
            "mov {lo:e}, 0",
            "adcx {w}, {lo}",
            "adox {w}, {lo}",
            // m = t2·(−p⁻¹); t += m·p·2^128, the carry out of t6 kept in w
            "mov rdx, {t2}",
            "mulx {hi}, rdx, qword ptr [{p} + 32]",
            "xor {lo:e}, {lo:e}",
            "mulx {hi}, {lo}, qword ptr [{p}]",
            "adox {t2}, {lo}",
            "adcx {t3}, {hi}",
            "mulx {hi}, {lo}, qword ptr [{p} + 8]",
            "adox {t3}, {lo}",
            "adcx {t4}, {hi}",
            "mulx {hi}, {lo}, qword ptr [{p} + 16]",
            "adox {t4}, {lo}",
            "adcx {t5}, {hi}",
            "mulx {hi}, {lo}, qword ptr [{p} + 24]",
            "adox {t5}, {lo}",
            "adcx {t6}, {hi}",
            "adox {t6}, {w}",
            "mov {w:e}, 0",
            "mov {lo:e}, 0",
            "adcx {w}, {lo}",
            "adox {w}, {lo}",
            // m = t3·(−p⁻¹); t += m·p·2^192, the carry out of t7 kept in w
            "mov rdx, {t3}",
            "mulx {hi}, rdx, qword ptr [{p} + 32]",
            "xor {lo:e}, {lo:e}",
            "mulx {hi}, {lo}, qword ptr [{p}]",
            "adox {t3}, {lo}",
            "adcx {t4}, {hi}",
            "mulx {hi}, {lo}, qword ptr [{p} + 8]",
            "adox {t4}, {lo}",
            "adcx {t5}, {hi}",
            "mulx {hi}, {lo}, qword ptr [{p} + 16]",
            "adox {t5}, {lo}",
            "adcx {t6}, {hi}",
            "mulx {hi}, {lo}, qword ptr [{p} + 24]",
            "adox {t6}, {lo}",
            "adcx {t7}, {hi}",
            "adox {t7}, {w}",
            "mov {w:e}, 0",
            "mov {lo:e}, 0",
            "adcx {w}, {lo}",
            "adox {w}, {lo}",
            w = inout(reg) t.as_ptr() => _,
            p = in(reg) modulus.as_ptr(),
            t0 = out(reg) _, t1 = out(reg) _, t2 = out(reg) _, t3 = out(reg) _,
            t4 = out(reg) t4, t5 = out(reg) t5, t6 = out(reg) t6, t7 = out(reg) t7,
            lo = out(reg) _, hi = out(reg) _,
            out("rdx") _,
            options(pure, readonly, nostack),
        );
    }
    [t4, t5, t6, t7]
}
