//! Keys from a multi-party ceremony run with snarkjs: our R1CS in iden3's `.r1cs` format for
//! its `groth16 setup` ([`r1cs_file`]), and its `.zkey` read back into our keys, bound to the
//! circuit ([`zkey`]). The same formats, written, let snarkjs and rapidsnark prove our
//! statements from a development key ([`zkey::write`]) and a request's witness
//! ([`wtns_file`]), to check them against us and to time them beside us.
//!
//! Why snarkjs' formats: the phase 1 files anyone can check (the Perpetual Powers of Tau) and
//! the tools that coordinate phase-2 contributions speak them. Both readers here are ours
//! (no dependency on a WebAssembly witness runtime for two file formats): the formats are
//! snarkjs' `src/zkey_utils.js` / `src/zkey_new.js` and iden3's r1csfile.

pub mod r1cs_file;
pub mod wtns_file;
pub mod zkey;
