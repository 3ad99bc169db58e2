//! The statement registry: the one list of the statements this service proves, and everything
//! the server, the CLI, the load generator and the scripts derive from it.
//!
//! A statement is one [`Entry`]: a [`Descriptor`] (its name, its sizes k or none, its prove and
//! verify routes, its Solidity contract title) around a [`Statement`] implementation (request
//! parser, native checks, the circuit for setup and for proving, the public-input order, request
//! generation). [`ALL`] lists the entries; nothing else lists statements.
//!
//! An [`Instance`] is a statement with one of its sizes (`transfer` with k = 6) or, for a
//! statement without sizes, the statement itself. [`instances`] are those a server hosts and
//! `enygma setup` makes keys for unless told otherwise; a statement whose descriptor says
//! `hosted_by_default: false` (the payment statements that hide the sender) is served only where
//! an operator names it, and [`all_instances`] includes it. Everything per key is per instance and derived
//! here: the key stem (`transfer-k6`, `ownership-721`), hence the key files
//! `{stem}.pk/.pk.sha256/.vk` and the development seed; the contract name
//! (`EnygmaTransferVerifierK6`, `EnygmaOwnership721Verifier`); the request paths
//! (`/generateProofTransfer-6`, `/ownership-721`).
//!
//! Adding a statement is one module that implements [`Statement`] and declares its
//! `static ...: Entry<...>`, plus one line in [`ALL`]. The module owns its request type
//! (parsed with whatever rules its API has: case-insensitive keys, hex addresses, ...), its
//! inputs type and its circuit struct; the registry erases their types ([`AnyStatement`]), so
//! the server, the CLI and the load generator never name them.

pub mod dvp;
pub mod payment;

use std::{any::Any, fmt, ops::RangeInclusive};

use ark_relations::gr1cs::{ConstraintSynthesizer, ConstraintSystemRef, SynthesisError};
use enygma_circuit::Fr;
use rand::RngCore;
use serde_json::Value;

use crate::{request::RequestError, ProveError};

/// Every statement the service proves, in the order listings use (`enygma info`, `setup`,
/// metrics). One entry per statement; see the module documentation.
pub static ALL: &[&dyn AnyStatement] = &[
    &payment::TRANSFER,
    &payment::DEPOSIT,
    &payment::WITHDRAW,
    &dvp::join_split::JOIN_SPLIT_ENYGMA,
    &dvp::join_split::JOIN_SPLIT_1155,
    &dvp::ownership::OWNERSHIP_721,
    &payment::HIDDEN_SENDER_TRANSFER,
    &payment::HIDDEN_SENDER_DEPOSIT,
    &payment::HIDDEN_SENDER_WITHDRAW,
];

/// The statement the CLI uses when `--circuit` is not given: the reference's main one.
pub const DEFAULT_STATEMENT: &str = "transfer";

/// The instance the load generator proves when it is not told which (the reference's sample
/// request is for it).
pub const DEFAULT_INSTANCE: &str = "transfer-k6";

/// The placeholder for k in a sized statement's route templates.
pub const K_PARAM: &str = "{k}";

/// The fixed facts of a statement.
#[derive(Debug)]
pub struct Descriptor {
    /// Lower case, `-`-separated: the CLI's `--circuit`, the server's `--circuits`, the
    /// `statement` metric label, and the key stem (with `-k{k}` for a sized statement).
    pub name: &'static str,
    /// The sizes k the statement comes in (`2..=6`), or `None` for a fixed-size statement.
    pub sizes: Option<RangeInclusive<usize>>,
    /// The proving route as registered: `/generateProofTransfer-{k}` (ends with [`K_PARAM`]
    /// exactly when the statement has sizes) or `/ownership-721`. Also the `route` metric label.
    pub prove_route: &'static str,
    /// The verifying route, like `prove_route`: `/verifyProofTransfer-{k}`.
    pub verify_route: &'static str,
    /// The middle of the Solidity contract name: `Transfer` gives `EnygmaTransferVerifierK6`,
    /// `JoinSplit1155` gives `EnygmaJoinSplit1155Verifier`. Letters and digits only.
    pub contract_title: &'static str,
    /// Whether a server hosts the statement, and `enygma setup` makes its keys, when no circuit
    /// list names what to serve. A statement a ledger must choose instead of another (the
    /// hidden sender's payments, whose nullifiers differ from the reference's for the same
    /// balance) is `false`: an operator names it in `--circuits`.
    pub hosted_by_default: bool,
}

/// A statement's behaviour, typed: what a statement module implements.
///
/// For a statement with sizes every `k` is `Some` and within them; for one without, `None`
/// (the registry checks this before calling).
pub trait Statement: Send + Sync + 'static {
    /// Every value of one parsed request, public and private. Its `Debug` must print no private
    /// value: the private ones are held in `enygma_circuit::Secret`, which also zeroizes them on
    /// drop (a test goes through every statement of the registry).
    type Inputs: fmt::Debug + Send + Sync + 'static;

    fn num_public_inputs(&self, k: Option<usize>) -> usize;

    /// JSON Schema (draft 2020-12, the dialect of OpenAPI 3.1) of a request body for size `k`:
    /// field names, decimal-string patterns, array lengths. The OpenAPI document is built from it.
    fn request_schema(&self, k: Option<usize>) -> serde_json::Value;

    /// Strict parse of a request body: HTTP 400, the message names the field, never a value.
    fn parse(&self, k: Option<usize>, body: &[u8]) -> Result<Self::Inputs, RequestError>;

    /// Why [`Statement::check`] refused a request: its `Display` is the 422 message.
    type CheckFailure: std::error::Error + Send + Sync + 'static;

    /// The statement's rules, evaluated natively before any proving work: HTTP 422, the
    /// message names the rule (and where it helps a public field), never a secret value.
    fn check(&self, inputs: &Self::Inputs) -> Result<(), Self::CheckFailure>;

    /// The circuit without values, for key generation and the constraint matrices.
    fn circuit_for_setup(&self, k: Option<usize>) -> Circuit;

    /// The circuit with the values of a request that passed [`Statement::check`].
    fn circuit_for_proving(&self, inputs: &Self::Inputs) -> Circuit;

    /// The public inputs in the circuit's (and `public_signal`'s) order.
    fn public_inputs(&self, inputs: &Self::Inputs) -> Vec<Fr>;

    /// The request body of `inputs`: what [`Statement::parse`] reads back as the same inputs.
    fn to_request(&self, inputs: &Self::Inputs) -> Value;

    /// A valid request body (what `enygma gen-request` writes), from `rng` and the hints in
    /// `spec` that apply to this statement.
    fn generate(
        &self,
        k: Option<usize>,
        spec: &RequestSpec,
        rng: &mut dyn RngCore,
    ) -> Result<Value, GenerateError>;

    /// The size k a request body is for, if the body tells (the transfer's `anonymity_set`
    /// length), so that `enygma prove` can do without `--k`.
    fn size_of_request(&self, _body: &Value) -> Option<usize> {
        None
    }
}

/// Hints for [`Statement::generate`]; each statement uses those that make sense for it and
/// refuses values it cannot honour.
#[derive(Clone, Debug)]
pub struct RequestSpec {
    /// The request's position in a pool (the payment statements vary the sender with it).
    pub index: usize,
    /// The sender's index in the anonymity set, if fixed.
    pub sender: Option<usize>,
    pub amount: u64,
    pub balance: u64,
}

impl Default for RequestSpec {
    fn default() -> Self {
        RequestSpec {
            index: 0,
            sender: None,
            amount: 25,
            balance: 1000,
        }
    }
}

impl RequestSpec {
    /// Refuses a fixed sender index: `statement` (e.g. "a join-split") has no anonymity set to
    /// pick the sender from.
    pub fn refuse_sender(&self, statement: &'static str) -> Result<(), GenerateError> {
        match self.sender {
            Some(_) => Err(GenerateError::NoSenderIndex { statement }),
            None => Ok(()),
        }
    }
}

/// Why [`Statement::generate`] cannot honour a [`RequestSpec`].
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
pub enum GenerateError {
    #[error("the sender index must be below k = {k}")]
    SenderOutOfRange { k: usize },
    #[error("the amount must not exceed the balance (but for a withdraw)")]
    AmountAboveBalance,
    /// `statement` is how a sentence names it: "a join-split".
    #[error("{statement} has no sender index (payment statements only)")]
    NoSenderIndex { statement: &'static str },
}

/// Why a statement name, a size k or a circuit list names no instance. The messages for a k
/// in a request path are the reference's 400 answers.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
pub enum InstanceError {
    /// A route's k that Go's `strconv.Atoi` refuses.
    #[error("{}", NON_NUMERIC_K)]
    NonNumericK,
    #[error("{}", unsupported_k_message(.sizes))]
    UnsupportedK { sizes: RangeInclusive<usize> },
    #[error("{statement} needs a size k ({} to {})", .sizes.start(), .sizes.end())]
    SizeRequired {
        statement: &'static str,
        sizes: RangeInclusive<usize>,
    },
    #[error("{statement} has no size k")]
    NoSizes { statement: &'static str },
    /// Neither a statement name nor a key stem; the message lists both.
    #[error("unknown circuit {item:?}: expected a statement ({}) or a key stem ({})", statement_names().join(", "), key_stems().join(", "))]
    Unknown { item: String },
    #[error("empty item in the circuit list {list:?}")]
    EmptyListItem { list: String },
    /// A circuit list file ([`resolve_list_text`]) with nothing but comments and blank lines: a
    /// server hosting nothing is a mistake, not a configuration.
    #[error("the circuit list names no circuit")]
    EmptyList,
    /// An item of a circuit list file refused, with the line it is on (1-based).
    #[error("line {line}: {error}")]
    AtLine {
        line: usize,
        error: Box<InstanceError>,
    },
}

/// A circuit of any statement, for the generic Groth16 code (setup, matrices, witness).
/// `ConstraintSynthesizer` consumes its circuit, so a statement's circuit struct is boxed as
/// the call that synthesizes it.
pub struct Circuit(Box<dyn FnOnce(ConstraintSystemRef<Fr>) -> Result<(), SynthesisError> + Send>);

impl Circuit {
    pub fn new<C: ConstraintSynthesizer<Fr> + Send + 'static>(circuit: C) -> Self {
        Circuit(Box::new(move |cs| circuit.generate_constraints(cs)))
    }
}

impl ConstraintSynthesizer<Fr> for Circuit {
    fn generate_constraints(self, cs: ConstraintSystemRef<Fr>) -> Result<(), SynthesisError> {
        (self.0)(cs)
    }
}

/// A statement module's registry entry: its descriptor and its implementation.
pub struct Entry<S> {
    pub descriptor: Descriptor,
    pub statement: S,
}

/// Parsed, checked inputs of some statement (its [`Statement::Inputs`], type-erased).
pub type Inputs = Box<dyn AnyInputs>;

/// A statement's [`Statement::Inputs`] with its type erased but its (redacting) `Debug` kept.
/// Call [`AnyInputs::as_any`] on the `dyn AnyInputs` itself (`(**inputs).as_any()` on an
/// [`Inputs`]): the box is an `AnyInputs` too, and would answer with itself.
pub trait AnyInputs: Any + fmt::Debug + Send + Sync {
    fn as_any(&self) -> &dyn Any;
}

impl<T: Any + fmt::Debug + Send + Sync> AnyInputs for T {
    fn as_any(&self) -> &dyn Any {
        self
    }
}

/// A registry entry with its types erased: what [`ALL`] lists and the server, the CLI and the
/// load generator use (mostly through [`Instance`]).
///
/// Every `k` must fit the descriptor's sizes (`Some` of one of them, or `None` for a statement
/// without sizes); a statement may panic on another. [`Instance`] only holds fitting ones, so
/// going through it never does.
pub trait AnyStatement: Send + Sync + 'static {
    fn descriptor(&self) -> &Descriptor;
    fn num_public_inputs(&self, k: Option<usize>) -> usize;
    fn request_schema(&self, k: Option<usize>) -> Value;
    /// [`Statement::parse`] then [`Statement::check`].
    fn parse_and_check(&self, k: Option<usize>, body: &[u8]) -> Result<Inputs, ProveError>;
    fn circuit_for_setup(&self, k: Option<usize>) -> Circuit;
    /// `None` if `inputs` are another statement's.
    fn circuit_for_proving(&self, inputs: &Inputs) -> Option<Circuit>;
    /// `None` if `inputs` are another statement's.
    fn public_inputs(&self, inputs: &Inputs) -> Option<Vec<Fr>>;
    /// `None` if `inputs` are another statement's.
    fn to_request(&self, inputs: &Inputs) -> Option<Value>;
    fn generate(
        &self,
        k: Option<usize>,
        spec: &RequestSpec,
        rng: &mut dyn RngCore,
    ) -> Result<Value, GenerateError>;
    fn size_of_request(&self, body: &Value) -> Option<usize>;
}

impl<S: Statement> AnyStatement for Entry<S> {
    fn descriptor(&self) -> &Descriptor {
        &self.descriptor
    }

    fn num_public_inputs(&self, k: Option<usize>) -> usize {
        self.statement.num_public_inputs(k)
    }

    fn request_schema(&self, k: Option<usize>) -> Value {
        self.statement.request_schema(k)
    }

    fn parse_and_check(&self, k: Option<usize>, body: &[u8]) -> Result<Inputs, ProveError> {
        let inputs = self.statement.parse(k, body)?;
        self.statement
            .check(&inputs)
            .map_err(|failure| ProveError::CheckFailed(Box::new(failure)))?;
        Ok(Box::new(inputs))
    }

    fn circuit_for_setup(&self, k: Option<usize>) -> Circuit {
        self.statement.circuit_for_setup(k)
    }

    fn circuit_for_proving(&self, inputs: &Inputs) -> Option<Circuit> {
        let inputs = (**inputs).as_any().downcast_ref::<S::Inputs>()?;
        Some(self.statement.circuit_for_proving(inputs))
    }

    fn public_inputs(&self, inputs: &Inputs) -> Option<Vec<Fr>> {
        let inputs = (**inputs).as_any().downcast_ref::<S::Inputs>()?;
        Some(self.statement.public_inputs(inputs))
    }

    fn to_request(&self, inputs: &Inputs) -> Option<Value> {
        let inputs = (**inputs).as_any().downcast_ref::<S::Inputs>()?;
        Some(self.statement.to_request(inputs))
    }

    fn generate(
        &self,
        k: Option<usize>,
        spec: &RequestSpec,
        rng: &mut dyn RngCore,
    ) -> Result<Value, GenerateError> {
        self.statement.generate(k, spec, rng)
    }

    fn size_of_request(&self, body: &Value) -> Option<usize> {
        self.statement.size_of_request(body)
    }
}

impl fmt::Debug for dyn AnyStatement {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.descriptor().name)
    }
}

/// Every statement of the registry.
pub fn all() -> impl Iterator<Item = &'static dyn AnyStatement> {
    ALL.iter().copied()
}

/// The statement named `name`.
pub fn by_name(name: &str) -> Option<&'static dyn AnyStatement> {
    all().find(|s| s.descriptor().name == name)
}

/// Every instance of every statement hosted by default ([`Descriptor::hosted_by_default`]), in
/// registry order then by k: what a server hosts and `enygma setup` makes keys for when no
/// circuit list is given.
pub fn instances() -> impl Iterator<Item = Instance> {
    all()
        .filter(|s| s.descriptor().hosted_by_default)
        .flat_map(instances_of)
}

/// Every instance of every statement, those an operator must name included, in registry order
/// then by k: what a circuit list, a key stem or a route can name.
pub fn all_instances() -> impl Iterator<Item = Instance> {
    all().flat_map(instances_of)
}

/// Every instance of one statement: one per k, or the statement itself.
pub fn instances_of(statement: &'static dyn AnyStatement) -> Vec<Instance> {
    match &statement.descriptor().sizes {
        Some(sizes) => sizes
            .clone()
            .map(|k| Instance {
                statement,
                k: Some(k),
            })
            .collect(),
        None => vec![Instance { statement, k: None }],
    }
}

/// The reference's message for a k that is not a number.
pub const NON_NUMERIC_K: &str = "Invalid k parameter: must be a number";

/// The reference's message for a numeric k outside a statement's sizes.
pub fn unsupported_k_message(sizes: &RangeInclusive<usize>) -> String {
    format!(
        "k value not supported: must be between {} and {}",
        sizes.start(),
        sizes.end()
    )
}

/// A statement with one of its sizes, or a statement without sizes: what has its own keys.
/// Only the registry makes them, so k always fits the statement.
#[derive(Clone, Copy)]
pub struct Instance {
    statement: &'static dyn AnyStatement,
    k: Option<usize>,
}

impl Instance {
    /// The instance of `statement` for `k`: `k` must be one of its sizes, or `None` for a
    /// statement without sizes. The error is the message a client or user should see.
    pub fn new(
        statement: &'static dyn AnyStatement,
        k: Option<usize>,
    ) -> Result<Self, InstanceError> {
        let d = statement.descriptor();
        match (&d.sizes, k) {
            (Some(sizes), Some(k)) if sizes.contains(&k) => Ok(Instance {
                statement,
                k: Some(k),
            }),
            (Some(sizes), Some(_)) => Err(InstanceError::UnsupportedK {
                sizes: sizes.clone(),
            }),
            (Some(sizes), None) => Err(InstanceError::SizeRequired {
                statement: d.name,
                sizes: sizes.clone(),
            }),
            (None, None) => Ok(Instance { statement, k: None }),
            (None, Some(_)) => Err(InstanceError::NoSizes { statement: d.name }),
        }
    }

    pub fn statement(&self) -> &'static dyn AnyStatement {
        self.statement
    }

    pub fn descriptor(&self) -> &'static Descriptor {
        self.statement.descriptor()
    }

    /// The statement's name: the `statement` metric label.
    pub fn name(&self) -> &'static str {
        self.descriptor().name
    }

    pub fn k(&self) -> Option<usize> {
        self.k
    }

    /// `transfer-k6`, or the name of a statement without sizes (`ownership-721`): the key files
    /// are `{stem}.pk`, `{stem}.pk.sha256` and `{stem}.vk`, and `--circuits` takes it.
    pub fn key_stem(&self) -> String {
        match self.k {
            Some(k) => format!("{}-k{k}", self.name()),
            None => self.name().to_string(),
        }
    }

    /// The Solidity verifier's contract name: `EnygmaTransferVerifierK6`,
    /// `EnygmaJoinSplit1155Verifier`.
    pub fn contract_name(&self) -> String {
        let title = self.descriptor().contract_title;
        match self.k {
            Some(k) => format!("Enygma{title}VerifierK{k}"),
            None => format!("Enygma{title}Verifier"),
        }
    }

    /// The text the development keys' seed hashes: the same as before the registry for the
    /// payment statements (`... transfer k=6`).
    pub fn development_seed_text(&self) -> String {
        match self.k {
            Some(k) => format!("enygma-prover development keys v1: {} k={k}", self.name()),
            None => format!("enygma-prover development keys v1: {}", self.name()),
        }
    }

    fn path(&self, route: &str) -> String {
        match self.k {
            Some(k) => route.replace(K_PARAM, &k.to_string()),
            None => route.to_string(),
        }
    }

    /// The path requests of this instance are posted to: `/generateProofTransfer-6`.
    pub fn prove_path(&self) -> String {
        self.path(self.descriptor().prove_route)
    }

    /// `/verifyProofTransfer-6`.
    pub fn verify_path(&self) -> String {
        self.path(self.descriptor().verify_route)
    }

    pub fn num_public_inputs(&self) -> usize {
        self.statement.num_public_inputs(self.k)
    }

    pub fn circuit_for_setup(&self) -> Circuit {
        self.statement.circuit_for_setup(self.k)
    }

    /// JSON Schema of a request body of this instance ([`Statement::request_schema`]); its
    /// `$ref`s point at [`crate::request::schema::definitions`].
    pub fn request_schema(&self) -> Value {
        self.statement.request_schema(self.k)
    }

    /// JSON Schema of this instance's proof (its prove route's 200 body, its verify route's
    /// request body).
    pub fn proof_schema(&self) -> Value {
        crate::request::schema::proof_response(self.num_public_inputs())
    }

    /// A valid request body of this instance.
    pub fn generate(
        &self,
        spec: &RequestSpec,
        rng: &mut dyn RngCore,
    ) -> Result<Value, GenerateError> {
        self.statement.generate(self.k, spec, rng)
    }
}

impl PartialEq for Instance {
    fn eq(&self, other: &Self) -> bool {
        self.name() == other.name() && self.k == other.k
    }
}

impl Eq for Instance {}

impl fmt::Display for Instance {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.key_stem())
    }
}

impl fmt::Debug for Instance {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.key_stem())
    }
}

/// The instance of statement `name` for `k` (`None` for a statement without sizes).
pub fn instance(name: &str, k: Option<usize>) -> Result<Instance, InstanceError> {
    let statement = by_name(name).ok_or_else(|| unknown(name))?;
    Instance::new(statement, k)
}

/// The instance whose key stem is `stem` (`transfer-k6`, `ownership-721`).
pub fn by_stem(stem: &str) -> Option<Instance> {
    all_instances().find(|i| i.key_stem() == stem)
}

/// An item of a circuit list: a statement name (every instance of it) or a key stem (that
/// one). The error names the item and lists the valid ones.
pub fn resolve(item: &str) -> Result<Vec<Instance>, InstanceError> {
    if let Some(statement) = by_name(item) {
        return Ok(instances_of(statement));
    }
    by_stem(item).map(|i| vec![i]).ok_or_else(|| unknown(item))
}

/// A comma-separated circuit list (`transfer-k6,deposit`), in registry order without
/// duplicates. Empty items are an error.
pub fn resolve_list(list: &str) -> Result<Vec<Instance>, InstanceError> {
    let mut chosen = Vec::new();
    for item in list.split(',').map(str::trim) {
        if item.is_empty() {
            return Err(InstanceError::EmptyListItem { list: list.into() });
        }
        chosen.extend(resolve(item)?);
    }
    Ok(all_instances().filter(|i| chosen.contains(i)).collect())
}

/// A circuit list as a file holds it (`enygma-server --circuits @FILE`): lines of
/// [`resolve_list`] items, `#` to the end of a line a comment, blank lines ignored; the union
/// of the lines, in registry order without duplicates. An error names the line; a file that
/// names no circuit is an error.
pub fn resolve_list_text(text: &str) -> Result<Vec<Instance>, InstanceError> {
    let mut chosen = Vec::new();
    for (i, line) in text.lines().enumerate() {
        let line = line.split_once('#').map_or(line, |(items, _comment)| items);
        let line = line.trim();
        if line.is_empty() {
            continue;
        }
        let items = resolve_list(line).map_err(|error| InstanceError::AtLine {
            line: i + 1,
            error: Box::new(error),
        })?;
        chosen.extend(items);
    }
    if chosen.is_empty() {
        return Err(InstanceError::EmptyList);
    }
    Ok(all_instances().filter(|i| chosen.contains(i)).collect())
}

/// The error for a circuit item that is neither a statement name nor a key stem.
pub fn unknown(item: &str) -> InstanceError {
    InstanceError::Unknown { item: item.into() }
}

fn statement_names() -> Vec<&'static str> {
    all().map(|s| s.descriptor().name).collect()
}

/// Every instance's key stem, in registry order, those hosted only when named included.
pub fn key_stems() -> Vec<String> {
    all_instances().map(|i| i.key_stem()).collect()
}

/// Parses the `{k}` of a sized statement's route as the reference does (Go's `strconv.Atoi`,
/// then a range check); the error is the reference's 400 message.
pub fn parse_k(sizes: &RangeInclusive<usize>, raw: &str) -> Result<usize, InstanceError> {
    let k: i64 = raw.parse().map_err(|_| InstanceError::NonNumericK)?;
    usize::try_from(k)
        .ok()
        .filter(|k| sizes.contains(k))
        .ok_or_else(|| InstanceError::UnsupportedK {
            sizes: sizes.clone(),
        })
}

/// Whether a route proves or verifies.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Action {
    Prove,
    Verify,
}

/// A request path that belongs to a statement's prove or verify route.
#[derive(Clone, Copy, Debug)]
pub struct RouteMatch<'a> {
    pub statement: &'static dyn AnyStatement,
    pub action: Action,
    /// The route template (`/generateProofTransfer-{k}`): the `route` metric label.
    pub route: &'static str,
    /// What stands where the template has `{k}`; `None` for a statement without sizes.
    pub raw_k: Option<&'a str>,
}

impl RouteMatch<'_> {
    /// The instance the path names; the error is the reference's 400 message for a bad k.
    pub fn instance(&self) -> Result<Instance, InstanceError> {
        match (&self.statement.descriptor().sizes, self.raw_k) {
            (Some(sizes), Some(raw)) => Instance::new(self.statement, Some(parse_k(sizes, raw)?)),
            _ => Instance::new(self.statement, None),
        }
    }
}

/// The statement route `path` belongs to, if any. A sized route matches every path that starts
/// with its template's text before `{k}` (k is checked by [`RouteMatch::instance`]); a route
/// without sizes matches its path exactly.
pub fn match_path(path: &str) -> Option<RouteMatch<'_>> {
    all().find_map(|statement| {
        let d = statement.descriptor();
        [
            (Action::Prove, d.prove_route),
            (Action::Verify, d.verify_route),
        ]
        .into_iter()
        .find_map(|(action, route)| {
            let raw_k = match route.strip_suffix(K_PARAM) {
                Some(prefix) => Some(path.strip_prefix(prefix)?),
                None if path == route => None,
                None => return None,
            };
            Some(RouteMatch {
                statement,
                action,
                route,
                raw_k,
            })
        })
    })
}

/// Test support for statement modules: a change to a request body (one bad-request case).
#[cfg(test)]
pub(crate) type Mutation = Box<dyn Fn(&mut Value)>;

/// Test support for statement modules: `body` prepares (parse, check) as `instance`, and the
/// circuit's assignment starts with exactly the public inputs the statement reports, in order.
#[cfg(test)]
pub(crate) fn assert_request_proves_its_public_inputs(instance: Instance, body: &Value) {
    let prepared = crate::prepare(instance, body.to_string().as_bytes()).unwrap();
    let public = prepared.public_inputs().unwrap();
    assert_eq!(public.len(), instance.num_public_inputs(), "{instance}");
    let circuit = instance
        .statement()
        .circuit_for_proving(&prepared.inputs)
        .unwrap();
    let assignment = crate::groth16::full_assignment(circuit).unwrap();
    assert_eq!(
        &assignment[1..=public.len()],
        public.as_slice(),
        "{instance}"
    );
}

#[cfg(test)]
mod tests {
    use super::*;

    fn stems(list: &[Instance]) -> Vec<String> {
        list.iter().map(Instance::key_stem).collect()
    }

    /// The registry's own consistency: names, stems, routes and contract names are unique and
    /// well-formed, so that everything derived from them is too.
    #[test]
    fn entries_are_unique_and_well_formed() {
        let mut names = std::collections::HashSet::new();
        let mut routes = std::collections::HashSet::new();
        for s in all() {
            let d = s.descriptor();
            assert!(names.insert(d.name), "{} twice", d.name);
            assert!(
                !d.name.is_empty()
                    && d.name
                        .bytes()
                        .all(|b| b.is_ascii_lowercase() || b.is_ascii_digit() || b == b'-'),
                "{}: names are lower case, digits and '-'",
                d.name
            );
            assert!(
                d.contract_title.bytes().all(|b| b.is_ascii_alphanumeric()),
                "{}",
                d.contract_title
            );
            for route in [d.prove_route, d.verify_route] {
                assert!(routes.insert(route), "{route} twice");
                assert!(route.starts_with('/'), "{route}");
                let params = route.matches('{').count();
                match &d.sizes {
                    Some(_) => assert!(route.ends_with(K_PARAM) && params == 1, "{route}"),
                    None => assert_eq!(params, 0, "{route}"),
                }
            }
        }
        let all_instances: Vec<Instance> = super::all_instances().collect();
        let mut seen = std::collections::HashSet::new();
        for i in &all_instances {
            assert!(seen.insert(i.key_stem()), "{i} twice");
            // A `--circuits` item is either a name or a stem, never both for different things.
            assert!(
                i.k().is_none() || !names.contains(i.key_stem().as_str()),
                "{i} is also a statement's name"
            );
            assert!(
                enygma_verifier::solidity::check_contract_name(&i.contract_name()).is_ok(),
                "{}",
                i.contract_name()
            );
            // Every instance's paths lead back to it.
            for (path, action) in [
                (i.prove_path(), Action::Prove),
                (i.verify_path(), Action::Verify),
            ] {
                let m = match_path(&path).unwrap_or_else(|| panic!("{path} unmatched"));
                assert_eq!((m.action, m.instance().unwrap()), (action, *i), "{path}");
            }
        }
    }

    #[test]
    fn the_payment_statements_keep_their_names_routes_and_files() {
        let stems: Vec<String> = instances().map(|i| i.key_stem()).collect();
        assert_eq!(stems.len(), 18);
        assert_eq!(stems[0], "transfer-k2");
        assert_eq!(stems[14], "withdraw-k6");
        let t6 = instance("transfer", Some(6)).unwrap();
        assert_eq!(t6.prove_path(), "/generateProofTransfer-6");
        assert_eq!(t6.verify_path(), "/verifyProofTransfer-6");
        assert_eq!(t6.contract_name(), "EnygmaTransferVerifierK6");
        assert_eq!(
            t6.development_seed_text(),
            "enygma-prover development keys v1: transfer k=6"
        );
        let w2 = instance("withdraw", Some(2)).unwrap();
        assert_eq!(w2.contract_name(), "EnygmaWithdrawVerifierK2");
        assert_eq!(w2.descriptor().prove_route, "/generateProofWithdraw-{k}");
        assert_eq!(w2.num_public_inputs(), 8 * 2 + 12);
        assert_eq!(by_stem(DEFAULT_INSTANCE).unwrap(), t6);
        assert!(by_name(DEFAULT_STATEMENT).is_some());
    }

    /// The reference's DvP paths, names without sizes, valid Solidity contract names.
    #[test]
    fn the_dvp_statements_have_the_references_paths() {
        let stems: Vec<String> = instances().skip(15).map(|i| i.key_stem()).collect();
        assert_eq!(
            stems,
            ["join-split-enygma", "join-split-1155", "ownership-721"]
        );
        for (stem, contract, public) in [
            ("join-split-enygma", "EnygmaJoinSplitEnygmaVerifier", 34),
            ("join-split-1155", "EnygmaJoinSplit1155Verifier", 34),
            ("ownership-721", "EnygmaOwnership721Verifier", 6),
        ] {
            let i = by_stem(stem).unwrap();
            assert_eq!(i, instance(stem, None).unwrap());
            assert_eq!(i.k(), None);
            assert_eq!(i.prove_path(), format!("/{stem}"));
            assert_eq!(i.verify_path(), format!("/verify-{stem}"));
            assert_eq!(i.contract_name(), contract);
            assert_eq!(i.num_public_inputs(), public);
            assert_eq!(
                i.development_seed_text(),
                format!("enygma-prover development keys v1: {stem}")
            );
            assert_eq!(
                instance(stem, Some(2)).unwrap_err().to_string(),
                format!("{stem} has no size k")
            );
        }
        assert_eq!(
            stems_of("join-split-enygma,ownership-721"),
            ["join-split-enygma", "ownership-721"]
        );
        assert!(match_path("/join-split-enygma-2").is_none());
    }

    /// The payment statements with the hidden sender's nullifier: their own names, routes, keys
    /// and contracts, hosted (and given keys by `enygma setup`) only where a circuit list names
    /// them.
    #[test]
    fn the_hidden_sender_statements_are_served_only_when_named() {
        let hidden: Vec<String> = all_instances().skip(18).map(|i| i.key_stem()).collect();
        assert_eq!(hidden.len(), 15);
        assert_eq!(hidden[0], "hidden-sender-transfer-k2");
        assert_eq!(hidden[14], "hidden-sender-withdraw-k6");
        assert!(instances().all(|i| !i.name().starts_with("hidden-sender")));
        assert_eq!(instances().count(), 18);
        let t6 = instance("hidden-sender-transfer", Some(6)).unwrap();
        assert_eq!(t6.prove_path(), "/generateProofHiddenSenderTransfer-6");
        assert_eq!(t6.verify_path(), "/verifyProofHiddenSenderTransfer-6");
        assert_eq!(t6.contract_name(), "EnygmaHiddenSenderTransferVerifierK6");
        assert_eq!(
            t6.development_seed_text(),
            "enygma-prover development keys v1: hidden-sender-transfer k=6"
        );
        // The same public inputs as the reference's: a gateway reads them alike.
        for (hidden, reference) in [
            ("hidden-sender-transfer", "transfer"),
            ("hidden-sender-deposit", "deposit"),
            ("hidden-sender-withdraw", "withdraw"),
        ] {
            for k in 2..=6 {
                assert_eq!(
                    instance(hidden, Some(k)).unwrap().num_public_inputs(),
                    instance(reference, Some(k)).unwrap().num_public_inputs()
                );
            }
        }
        assert_eq!(
            stems_of("transfer-k6,hidden-sender-deposit-k3"),
            ["transfer-k6", "hidden-sender-deposit-k3"]
        );
        assert_eq!(resolve_list("hidden-sender-withdraw").unwrap().len(), 5);
        assert_eq!(by_stem("hidden-sender-transfer-k2").unwrap().k(), Some(2));
        let m = match_path("/generateProofHiddenSenderDeposit-4").unwrap();
        assert_eq!(m.instance().unwrap().key_stem(), "hidden-sender-deposit-k4");
    }

    fn stems_of(list: &str) -> Vec<String> {
        stems(&resolve_list(list).unwrap())
    }

    #[test]
    fn k_is_parsed_as_the_reference_does() {
        let sizes = 2..=6;
        assert_eq!(parse_k(&sizes, "2"), Ok(2));
        assert_eq!(parse_k(&sizes, "6"), Ok(6));
        assert_eq!(parse_k(&sizes, "+4"), Ok(4)); // Atoi accepts a sign
        assert_eq!(parse_k(&sizes, "06"), Ok(6));
        let parse_k = |sizes: &RangeInclusive<usize>, raw: &str| {
            super::parse_k(sizes, raw).map_err(|e| e.to_string())
        };
        let unsupported = Err("k value not supported: must be between 2 and 6".to_string());
        assert_eq!(parse_k(&sizes, "7"), unsupported);
        assert_eq!(parse_k(&sizes, "1"), unsupported);
        assert_eq!(parse_k(&sizes, "-3"), unsupported);
        let nan = Err(NON_NUMERIC_K.to_string());
        assert_eq!(parse_k(&sizes, "abc"), nan);
        assert_eq!(parse_k(&sizes, ""), nan);
        assert_eq!(parse_k(&sizes, "99999999999999999999"), nan);
    }

    #[test]
    fn paths_match_their_routes_only() {
        let m = match_path("/generateProofDeposit-x").unwrap();
        assert_eq!(m.action, Action::Prove);
        assert_eq!(m.route, "/generateProofDeposit-{k}");
        assert_eq!(m.raw_k, Some("x"));
        assert_eq!(m.instance().unwrap_err().to_string(), NON_NUMERIC_K);
        assert_eq!(
            match_path("/verifyProofWithdraw-9")
                .unwrap()
                .instance()
                .unwrap_err()
                .to_string(),
            "k value not supported: must be between 2 and 6"
        );
        for other in [
            "/generateProofdeposit-2",
            "/generateProofJoinsplit-2",
            "/generateProofTransfer",
            "/healthcheck",
            "/",
        ] {
            assert!(match_path(other).is_none(), "{other}");
        }
    }

    #[test]
    fn circuit_lists_take_names_and_stems() {
        assert_eq!(
            stems(&resolve_list("transfer-k6").unwrap()),
            ["transfer-k6"]
        );
        assert_eq!(
            stems(&resolve_list("deposit-k3, transfer-k6,deposit-k3").unwrap()),
            ["transfer-k6", "deposit-k3"]
        );
        assert_eq!(
            stems(&resolve_list("withdraw").unwrap()),
            [
                "withdraw-k2",
                "withdraw-k3",
                "withdraw-k4",
                "withdraw-k5",
                "withdraw-k6"
            ]
        );
        assert_eq!(resolve_list("transfer,deposit,withdraw").unwrap().len(), 15);
        let err = resolve_list("transfer-k7").unwrap_err().to_string();
        assert!(err.starts_with("unknown circuit \"transfer-k7\""), "{err}");
        assert!(err.contains("transfer, deposit, withdraw"), "{err}");
        assert!(
            err.contains("transfer-k2") && err.contains("withdraw-k6"),
            "{err}"
        );
        assert!(resolve_list("transfer,").is_err());
        assert_eq!(
            instance("transfer", None).unwrap_err().to_string(),
            "transfer needs a size k (2 to 6)"
        );
        assert_eq!(
            instance("deposit", Some(1)).unwrap_err().to_string(),
            "k value not supported: must be between 2 and 6"
        );
    }

    /// A list file: lines of list items, comments and blank lines; the union in registry order.
    /// An unknown item or an empty one names its line; comments alone name no circuit.
    #[test]
    fn circuit_list_files_take_lines_and_comments() {
        let text = "# hosted on this pool\ntransfer-k2\n\n  ownership-721 # NFTs\ndeposit-k2, transfer-k2\n";
        assert_eq!(
            stems(&resolve_list_text(text).unwrap()),
            ["transfer-k2", "deposit-k2", "ownership-721"]
        );
        let err = resolve_list_text("transfer-k2\n# next\ntransfer-k9\n")
            .unwrap_err()
            .to_string();
        assert!(
            err.starts_with("line 3: unknown circuit \"transfer-k9\""),
            "{err}"
        );
        let err = resolve_list_text("transfer-k2,\n").unwrap_err().to_string();
        assert!(err.starts_with("line 1: empty item"), "{err}");
        assert_eq!(
            resolve_list_text("# nothing\n\n").unwrap_err(),
            InstanceError::EmptyList
        );
    }

    proptest::proptest! {
        #![proptest_config(proptest::prelude::ProptestConfig::with_cases(12))]

        /// Every instance of the registry: a request generated from any seed parses, passes the
        /// statement's rules, and writes back as the same body, so the request format has one
        /// reading and one writing that agree.
        #[test]
        fn generated_requests_round_trip(seed: u64, index in 0usize..64) {
            use rand::SeedableRng;
            for instance in all_instances() {
                let mut rng = rand_chacha::ChaCha8Rng::seed_from_u64(seed);
                let spec = RequestSpec { index, ..RequestSpec::default() };
                let body = instance.generate(&spec, &mut rng).unwrap();
                let statement = instance.statement();
                let inputs = statement
                    .parse_and_check(instance.k(), body.to_string().as_bytes())
                    .unwrap_or_else(|e| panic!("{instance}: {e}"));
                let written = statement.to_request(&inputs);
                proptest::prop_assert_eq!(written.as_ref(), Some(&body), "{}", instance);
            }
        }
    }
}
