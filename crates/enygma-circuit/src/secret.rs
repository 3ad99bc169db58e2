//! [`Secret`]: how the statements' private inputs are held.
//!
//! Every value a statement keeps private (a secret key, a balance, a random or blinding value, a
//! shared secret, a salt, a DvP private key, an amount, a Merkle path, the sender's identity) is
//! a field of type `Secret<_>` in the inputs structs ([`crate::payment::PaymentInputs`],
//! [`crate::dvp::join_split::JoinSplitInputs`], [`crate::dvp::ownership::OwnershipInputs`]).
//! The rule is the circuit's: a value that is not a public input is a `Secret`. So a derived
//! `Debug` of those structs prints the public values and `Secret(..)` for the others, and
//! dropping them (a request refused by a check, the circuit after witness synthesis, a clone)
//! overwrites the private values with zeros before the memory is freed.
//!
//! What this cannot reach: copies the compiler makes of a `T` on the stack while computing with
//! it (a `Poseidon` call's arguments, the gadgets' own copies during synthesis), which are
//! overwritten as the stack is reused but not wiped; see "Secrets in memory" in
//! `docs/security.md` for the whole list.

use std::{
    fmt,
    ops::{AddAssign, Deref, DerefMut, SubAssign},
};

use zeroize::{Zeroize, ZeroizeOnDrop};

/// A private value: zeroized when dropped, and `Secret(..)` in `Debug` output. It derefs to the
/// value, so the statement code reads it as a `T`; writing one takes `.into()` or
/// [`Secret::new`].
///
/// Equality is the value's (not constant-time): it serves tests and the native checks, which
/// compare values the caller sent.
#[derive(Clone, Default, PartialEq, Eq)]
pub struct Secret<T: Zeroize>(T);

impl<T: Zeroize> Zeroize for Secret<T> {
    fn zeroize(&mut self) {
        self.0.zeroize();
    }
}

impl<T: Zeroize> Drop for Secret<T> {
    fn drop(&mut self) {
        self.0.zeroize();
    }
}

impl<T: Zeroize> ZeroizeOnDrop for Secret<T> {}

impl<T: Zeroize> Secret<T> {
    pub fn new(value: T) -> Self {
        Secret(value)
    }

    /// The value, for code that must hold a `T` itself (the caller then owns its wiping).
    pub fn expose(&self) -> &T {
        &self.0
    }
}

impl<T: Zeroize> From<T> for Secret<T> {
    fn from(value: T) -> Self {
        Secret(value)
    }
}

impl<T: Zeroize> Deref for Secret<T> {
    type Target = T;

    fn deref(&self) -> &T {
        &self.0
    }
}

impl<T: Zeroize> DerefMut for Secret<T> {
    fn deref_mut(&mut self) -> &mut T {
        &mut self.0
    }
}

/// Tests and generators adjust values in place (`*t.secret_key += one` also works).
impl<T: Zeroize + AddAssign<R>, R> AddAssign<R> for Secret<T> {
    fn add_assign(&mut self, rhs: R) {
        self.0 += rhs;
    }
}

impl<T: Zeroize + SubAssign<R>, R> SubAssign<R> for Secret<T> {
    fn sub_assign(&mut self, rhs: R) {
        self.0 -= rhs;
    }
}

/// Never the value, nor its length (a `Vec`'s length is public anyway: it is k or a fixed slot
/// count, but nothing here needs it).
impl<T: Zeroize> fmt::Debug for Secret<T> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("Secret(..)")
    }
}

impl<T: Zeroize> FromIterator<T::Item> for Secret<T>
where
    T: FromIterator<T::Item> + IntoIterator,
{
    fn from_iter<I: IntoIterator<Item = T::Item>>(iter: I) -> Self {
        Secret(iter.into_iter().collect())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::Fr;

    #[test]
    fn debug_is_redacted_and_deref_reads_the_value() {
        let s: Secret<Fr> = Fr::from(123456789u64).into();
        assert_eq!(format!("{s:?}"), "Secret(..)");
        assert_eq!(format!("{s:#?}"), "Secret(..)");
        assert_eq!(*s, Fr::from(123456789u64));
        let v: Secret<Vec<Fr>> = (1..4u64).map(Fr::from).collect();
        assert_eq!(v.len(), 3);
        assert_eq!(format!("{v:?}"), "Secret(..)");
    }

    #[test]
    fn zeroize_clears_the_value() {
        let mut s: Secret<Vec<Fr>> = vec![Fr::from(7u64); 4].into();
        s.zeroize();
        assert!(s.is_empty(), "a zeroized Vec is also cleared");
        let mut x: Secret<Fr> = Fr::from(9u64).into();
        x.zeroize();
        assert_eq!(*x, Fr::from(0u64));
    }
}
