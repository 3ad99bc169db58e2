//! What AVX-512 IFMA pays for BN254 field products on this CPU, before any MSM is built on it:
//! `cargo build --release -p enygma-msm --example ifma_field`, then run the binary.
//!
//! Four variants, interleaved round by round so that drifting clock and load hit all alike:
//! (a) 2^20 arkworks `Fq` products, (b) the same 2^20 as 2^17 eight-lane IFMA products,
//! (c) 2^18 arkworks `Fq2` products, (d) the same as 2^15 eight-lane IFMA products.
//! Each variant runs 64 dependency chains (`x ← x·y`), eight at a time, so that neither the
//! scalar code nor the vector code waits on its own latency; the 64 results of the scalar and
//! vector variants must agree, which also keeps the optimiser from dropping the work.

#[cfg(target_arch = "x86_64")]
mod timing {
    use ark_bn254::{Fq, Fq2};
    use ark_std::UniformRand;
    use enygma_msm::ifma::{Fq2x8, Fq8, LANES};
    use rand::SeedableRng;
    use rand_chacha::ChaCha20Rng;
    use std::hint::black_box;
    use std::time::Instant;

    const ROUNDS: usize = 7;
    /// Chains advanced together: 8 scalar chains, or 8 vectors of 8 lanes.
    const GROUP: usize = 8;
    const CHAINS: usize = GROUP * LANES;
    const FQ_STEPS: usize = (1 << 20) / CHAINS;
    const FQ2_STEPS: usize = (1 << 18) / CHAINS;

    /// Scalar chains: the 64 chains eight at a time, the group's eight interleaved.
    fn scalar_chains<F: Copy + core::ops::MulAssign>(
        x: &[F; CHAINS],
        y: &[F; CHAINS],
        steps: usize,
    ) -> [F; CHAINS] {
        let mut out = *x;
        for group in 0..LANES {
            let mut acc: [F; GROUP] = core::array::from_fn(|c| x[group * GROUP + c]);
            let factor: [F; GROUP] = core::array::from_fn(|c| y[group * GROUP + c]);
            for _ in 0..steps {
                for c in 0..GROUP {
                    acc[c] *= factor[c];
                }
            }
            out[group * GROUP..][..GROUP].copy_from_slice(&acc);
        }
        out
    }

    /// Vector `v`, lane `l` runs scalar chain `l·GROUP + v`: the same 64 chains.
    fn lanes_of<T: Copy>(chains: &[T; CHAINS], vector: usize) -> [T; LANES] {
        core::array::from_fn(|lane| chains[lane * GROUP + vector])
    }

    #[target_feature(enable = "avx512f,avx512ifma")]
    fn fq_vector_chains(mut x: [Fq8; GROUP], y: [Fq8; GROUP], steps: usize) -> [Fq8; GROUP] {
        for _ in 0..steps {
            for v in 0..GROUP {
                x[v] = x[v].mul(y[v]);
            }
        }
        x
    }

    #[target_feature(enable = "avx512f,avx512ifma")]
    fn fq2_vector_chains(mut x: [Fq2x8; GROUP], y: [Fq2x8; GROUP], steps: usize) -> [Fq2x8; GROUP] {
        for _ in 0..steps {
            for v in 0..GROUP {
                x[v] = x[v].mul(y[v]);
            }
        }
        x
    }

    struct Variant {
        name: &'static str,
        products: usize,
        ns: Vec<f64>,
    }

    impl Variant {
        fn record(&mut self, start: Instant) {
            self.ns
                .push(start.elapsed().as_nanos() as f64 / self.products as f64);
        }
        fn median(&self) -> f64 {
            let mut sorted = self.ns.clone();
            sorted.sort_by(f64::total_cmp);
            sorted[sorted.len() / 2]
        }
        fn print(&self) {
            let (lo, hi) = self
                .ns
                .iter()
                .fold((f64::MAX, 0f64), |(lo, hi), &t| (lo.min(t), hi.max(t)));
            println!(
                "{:<28} {:>9} products  median {:>6.2} ns/product  range {:.2}-{:.2}",
                self.name,
                self.products,
                self.median(),
                lo,
                hi
            );
        }
    }

    pub fn run() {
        let cpu = std::fs::read_to_string("/proc/cpuinfo")
            .ok()
            .and_then(|info| {
                info.lines()
                    .find(|l| l.starts_with("model name"))
                    .map(|l| l.split(':').nth(1).unwrap_or("").trim().to_string())
            })
            .unwrap_or_else(|| "unknown".into());
        println!("cpu: {cpu}");
        if !is_x86_feature_detected!("avx512ifma") {
            println!("this CPU has no AVX-512 IFMA: nothing to compare");
            return;
        }
        let mut rng = ChaCha20Rng::seed_from_u64(16);
        let fq_x: [Fq; CHAINS] = core::array::from_fn(|_| Fq::rand(&mut rng));
        let fq_y: [Fq; CHAINS] = core::array::from_fn(|_| Fq::rand(&mut rng));
        let fq2_x: [Fq2; CHAINS] = core::array::from_fn(|_| Fq2::rand(&mut rng));
        let fq2_y: [Fq2; CHAINS] = core::array::from_fn(|_| Fq2::rand(&mut rng));
        let fq8_x: [Fq8; GROUP] = core::array::from_fn(|v| Fq8::from_fq(&lanes_of(&fq_x, v)));
        let fq8_y: [Fq8; GROUP] = core::array::from_fn(|v| Fq8::from_fq(&lanes_of(&fq_y, v)));
        let fq2x8_x: [Fq2x8; GROUP] =
            core::array::from_fn(|v| Fq2x8::from_fq2(&lanes_of(&fq2_x, v)));
        let fq2x8_y: [Fq2x8; GROUP] =
            core::array::from_fn(|v| Fq2x8::from_fq2(&lanes_of(&fq2_y, v)));

        let mut variants = [
            ("(a) arkworks Fq", 1 << 20),
            ("(b) IFMA Fq8", 1 << 20),
            ("(c) arkworks Fq2", 1 << 18),
            ("(d) IFMA Fq2x8", 1 << 18),
        ]
        .map(|(name, products)| Variant {
            name,
            products,
            ns: Vec::new(),
        });
        let mut agree = true;
        let mut checksums: [String; 4] = Default::default();
        for _ in 0..ROUNDS {
            let t = Instant::now();
            let fq = black_box(scalar_chains(black_box(&fq_x), black_box(&fq_y), FQ_STEPS));
            variants[0].record(t);

            let t = Instant::now();
            // SAFETY: the CPU has AVX-512 F and IFMA (checked above).
            let fq8 = black_box(unsafe {
                fq_vector_chains(black_box(fq8_x), black_box(fq8_y), FQ_STEPS)
            });
            variants[1].record(t);

            let t = Instant::now();
            let fq2 = black_box(scalar_chains(
                black_box(&fq2_x),
                black_box(&fq2_y),
                FQ2_STEPS,
            ));
            variants[2].record(t);

            let t = Instant::now();
            // SAFETY: the CPU has AVX-512 F and IFMA (checked above).
            let fq2x8 = black_box(unsafe {
                fq2_vector_chains(black_box(fq2x8_x), black_box(fq2x8_y), FQ2_STEPS)
            });
            variants[3].record(t);

            // Every chain's end, then the checksums (sums of the 64 ends) printed below.
            for v in 0..GROUP {
                agree &= fq8[v].to_fq() == lanes_of(&fq, v);
                agree &= fq2x8[v].to_fq2() == lanes_of(&fq2, v);
            }
            let round_checksums = [
                fq.iter().sum::<Fq>().to_string(),
                fq8.iter().flat_map(|v| v.to_fq()).sum::<Fq>().to_string(),
                fq2.iter().sum::<Fq2>().to_string(),
                fq2x8
                    .iter()
                    .flat_map(|v| v.to_fq2())
                    .sum::<Fq2>()
                    .to_string(),
            ];
            agree &= round_checksums[0] == round_checksums[1]
                && round_checksums[2] == round_checksums[3];
            checksums = round_checksums;
        }
        println!("checksum Fq  arkworks: {}", checksums[0]);
        println!("checksum Fq  IFMA:     {}", checksums[1]);
        println!("checksum Fq2 arkworks: {}", checksums[2]);
        println!("checksum Fq2 IFMA:     {}", checksums[3]);
        println!("rounds: {ROUNDS}, interleaved a, b, c, d");
        for variant in &variants {
            variant.print();
        }
        println!(
            "ratio Fq  arkworks/IFMA: {:.2}x",
            variants[0].median() / variants[1].median()
        );
        println!(
            "ratio Fq2 arkworks/IFMA: {:.2}x",
            variants[2].median() / variants[3].median()
        );
        println!("agree: {}", if agree { "yes" } else { "NO" });
        if !agree {
            std::process::exit(1);
        }
    }
}

#[cfg(target_arch = "x86_64")]
fn main() {
    timing::run();
}

#[cfg(not(target_arch = "x86_64"))]
fn main() {
    println!("AVX-512 IFMA exists only on x86_64: nothing to compare");
}
