//! The depth-8 Merkle trees that hold the DvP notes (256 leaves each), with the reference's rule:
//! the leaf index is read as 8 bits, least significant first, and bit j = 1 means that the node
//! at level j is the *right* child, so that level's parent is `Poseidon(sibling, node)`;
//! otherwise it is `Poseidon(node, sibling)`. An empty leaf is `Z0 = keccak256("ZkDvp") mod r`,
//! and `Z(k+1) = Poseidon(Zk, Zk)` is the root of an empty subtree of height k + 1.
//!
//! The circuits never use the empty values: clients send them as siblings. [`Tree`] builds real
//! trees from them for generated inputs and tests.

pub mod constraints;

use std::{collections::BTreeMap, str::FromStr, sync::OnceLock};

use ark_ff::{BigInteger, PrimeField};

use crate::{poseidon, Fr};

/// Levels of every tree (the reference's fixed depth; its `merkleDepth` field is ignored).
pub const DEPTH: usize = 8;

/// Leaves of a tree: leaf indices are below this.
pub const LEAVES: usize = 1 << DEPTH;

/// `Z0 = keccak256("ZkDvp") mod r`, the value of an empty leaf (dvp.md; the reference's
/// constant).
pub const EMPTY_LEAF_DECIMAL: &str =
    "21786163348386038604960770631540184405176086071424084281943739401806009032442";

/// `[Z0, …, Z8]`: `Zk` is the root of an empty subtree of height k, `Z8` the empty tree's root.
pub fn zeros() -> &'static [Fr; DEPTH + 1] {
    static ZEROS: OnceLock<[Fr; DEPTH + 1]> = OnceLock::new();
    ZEROS.get_or_init(|| {
        let mut z = [Fr::from_str(EMPTY_LEAF_DECIMAL).expect("a decimal below r"); DEPTH + 1];
        for k in 0..DEPTH {
            z[k + 1] = poseidon::hash(&[z[k], z[k]]);
        }
        z
    })
}

/// The parent of `node` at a level where the node's index bit is `is_right`.
fn parent(node: Fr, sibling: Fr, is_right: bool) -> Fr {
    if is_right {
        poseidon::hash(&[sibling, node])
    } else {
        poseidon::hash(&[node, sibling])
    }
}

/// The root reached from `leaf` at `index` (below [`LEAVES`]) with `siblings`, level 0 first.
pub fn root(leaf: Fr, index: usize, siblings: &[Fr; DEPTH]) -> Fr {
    assert!(index < LEAVES, "a leaf index has {DEPTH} bits");
    siblings
        .iter()
        .enumerate()
        .fold(leaf, |node, (level, sibling)| {
            parent(node, *sibling, (index >> level) & 1 == 1)
        })
}

/// A leaf's authentication path as a request gives it: the index and the siblings, each a field
/// element.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct MerklePath {
    pub index: Fr,
    pub siblings: [Fr; DEPTH],
}

/// A path tells which note is spent, so requests hold it as a [`crate::Secret`], which needs
/// this.
impl zeroize::Zeroize for MerklePath {
    fn zeroize(&mut self) {
        self.index.zeroize();
        self.siblings.zeroize();
    }
}

impl MerklePath {
    /// Index 0 with all siblings 0: the path of a dummy slot.
    pub fn zero() -> Self {
        Self {
            index: Fr::from(0u64),
            siblings: [Fr::from(0u64); DEPTH],
        }
    }

    /// The index as an integer, or `None` when it is 256 or more (no leaf of a depth-8 tree).
    pub fn leaf_index(&self) -> Option<usize> {
        let index = self.index.into_bigint();
        (index.num_bits() as usize <= DEPTH).then(|| index.as_ref()[0] as usize)
    }

    /// The root this path reaches from `leaf`, or `None` when the index is out of range.
    pub fn root(&self, leaf: Fr) -> Option<Fr> {
        self.leaf_index()
            .map(|index| root(leaf, index, &self.siblings))
    }
}

/// A depth-8 tree holding a few leaves; every other leaf is empty (Z0).
#[derive(Clone, Debug, Default)]
pub struct Tree {
    leaves: BTreeMap<usize, Fr>,
}

impl Tree {
    pub fn new() -> Self {
        Self::default()
    }

    /// Puts `leaf` at `index`, replacing what was there.
    pub fn insert(&mut self, index: usize, leaf: Fr) {
        assert!(index < LEAVES, "a leaf index has {DEPTH} bits");
        self.leaves.insert(index, leaf);
    }

    /// `true` when a leaf was inserted at `index`.
    pub fn is_occupied(&self, index: usize) -> bool {
        self.leaves.contains_key(&index)
    }

    /// The non-empty nodes of every level, level 0 (the leaves) first.
    fn levels(&self) -> Vec<BTreeMap<usize, Fr>> {
        let zeros = zeros();
        let mut levels = vec![self.leaves.clone()];
        for level in 0..DEPTH {
            let nodes = &levels[level];
            let node = |i: usize| nodes.get(&i).copied().unwrap_or(zeros[level]);
            let parents = nodes
                .keys()
                .map(|&i| (i / 2, poseidon::hash(&[node(i & !1), node(i | 1)])))
                .collect();
            levels.push(parents);
        }
        levels
    }

    pub fn root(&self) -> Fr {
        self.levels()[DEPTH]
            .get(&0)
            .copied()
            .unwrap_or(zeros()[DEPTH])
    }

    /// The path of the leaf at `index`, with the siblings of the tree as it is now.
    pub fn path(&self, index: usize) -> MerklePath {
        assert!(index < LEAVES, "a leaf index has {DEPTH} bits");
        let levels = self.levels();
        let siblings = std::array::from_fn(|level| {
            let sibling = (index >> level) ^ 1;
            levels[level]
                .get(&sibling)
                .copied()
                .unwrap_or(zeros()[level])
        });
        MerklePath {
            index: Fr::from(index as u64),
            siblings,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use ark_ff::UniformRand;
    use rand::{Rng, SeedableRng};

    fn fr(s: &str) -> Fr {
        Fr::from_str(s).unwrap()
    }

    /// dvp.md: the depth-8 empty root.
    #[test]
    fn empty_root_is_z8() {
        assert_eq!(
            zeros()[DEPTH],
            fr("10201237349411555912925030596934589346435566232504971402396421291692387493081")
        );
        assert_eq!(Tree::new().root(), zeros()[DEPTH]);
    }

    /// The samples' siblings at levels 2–7 are Z2..Z7, and the ERC-1155 sample's level-1
    /// sibling is Z1 (dvp.md, "What the samples reproduce").
    #[test]
    fn the_samples_siblings_are_the_empty_subtrees() {
        assert_eq!(
            zeros()[1],
            fr("18548196279604799461048000334259916142758522801444715662239164855577399482970")
        );
        let sample_levels_2_to_7 = [
            "6394967702556731931349597360857231577818344086247308420600702098348151392332",
            "20304752715056542815811329636342056767286663221745207495535784435548485430561",
            "10123741241923738392878827949878021844799105553604491080266583922031272507954",
            "7763070937946622828545897559398364952701415676360141127081877575944863661924",
            "4336110172767843874572170947831826800762554433417721132971126558487413457970",
            "17793516955206672117877101086466671169038346493482525475927531680188516206475",
        ];
        for (k, z) in (2..8).zip(sample_levels_2_to_7) {
            assert_eq!(zeros()[k], fr(z), "Z{k}");
        }
    }

    #[test]
    fn tree_paths_reach_the_tree_root_and_the_bit_order_matters() {
        let mut rng = rand_chacha::ChaCha8Rng::seed_from_u64(81);
        let mut tree = Tree::new();
        let indices = [0usize, 1, 2, 77, 128, 255];
        for &i in &indices {
            tree.insert(i, Fr::rand(&mut rng));
        }
        let root_now = tree.root();
        for &i in &indices {
            let path = tree.path(i);
            assert_eq!(path.leaf_index(), Some(i));
            assert_eq!(path.root(tree.leaves[&i]), Some(root_now), "leaf {i}");
        }
        // An empty leaf's path reaches the root too, with Z0 as its leaf.
        let empty = rng.gen_range(3..77);
        assert_eq!(tree.path(empty).root(zeros()[0]), Some(root_now));
        // Reading the index most significant bit first reaches another root.
        let path = tree.path(77);
        let reversed = (77u8).reverse_bits() as usize;
        assert_ne!(root(tree.leaves[&77], reversed, &path.siblings), root_now);
    }

    #[test]
    fn indices_of_256_and_more_have_no_leaf() {
        let mut path = MerklePath::zero();
        path.index = Fr::from(255u64);
        assert_eq!(path.leaf_index(), Some(255));
        path.index = Fr::from(256u64);
        assert_eq!(path.leaf_index(), None);
        assert_eq!(path.root(Fr::from(1u64)), None);
        path.index = -Fr::from(1u64);
        assert_eq!(path.leaf_index(), None);
    }
}
