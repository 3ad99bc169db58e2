// Times rapidsnark's proof alone: the zkey is loaded once (groth16_prover_create), then each
// proof is one groth16_prover_prove on the same witness, timed from call to return. The loading
// and the witness file's reading stay out of the figures, as they do for our side
// (crates/enygma-prover/examples/peer_prove.rs).
//
// Usage: prove_times ZKEY WTNS PROOFS [PROOF_JSON PUBLIC_JSON]
// Prints `load_ms X` once and `proof_ms X` per proof; writes the last proof and its public
// signals when asked, so that the caller can check them with snarkjs and our verifier.

#include <prover.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <iterator>
#include <string>
#include <vector>

static std::vector<char> read_file(const char *path) {
    std::ifstream in(path, std::ios::binary);
    if (!in) {
        std::fprintf(stderr, "cannot read %s\n", path);
        std::exit(2);
    }
    return std::vector<char>(std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>());
}

static void write_file(const char *path, const std::string &text) {
    std::ofstream out(path, std::ios::binary);
    out << text;
    if (!out) {
        std::fprintf(stderr, "cannot write %s\n", path);
        std::exit(2);
    }
}

static double ms_since(std::chrono::steady_clock::time_point start) {
    return std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - start).count();
}

int main(int argc, char **argv) {
    if (argc != 4 && argc != 6) {
        std::fprintf(stderr, "usage: %s ZKEY WTNS PROOFS [PROOF_JSON PUBLIC_JSON]\n", argv[0]);
        return 2;
    }
    const std::vector<char> zkey = read_file(argv[1]);
    const std::vector<char> wtns = read_file(argv[2]);
    const int proofs = std::atoi(argv[3]);
    char error[1024] = {0};

    auto started = std::chrono::steady_clock::now();
    void *prover = nullptr;
    if (groth16_prover_create(&prover, zkey.data(), zkey.size(), error, sizeof error) != PROVER_OK) {
        std::fprintf(stderr, "groth16_prover_create: %s\n", error);
        return 1;
    }
    std::printf("load_ms %.3f\n", ms_since(started));

    unsigned long long proof_capacity = 0;
    groth16_proof_size(&proof_capacity);
    unsigned long long public_capacity = 0;
    if (groth16_public_size_for_zkey_buf(zkey.data(), zkey.size(), &public_capacity, error,
                                         sizeof error) != PROVER_OK) {
        std::fprintf(stderr, "groth16_public_size_for_zkey_buf: %s\n", error);
        return 1;
    }
    std::vector<char> proof(proof_capacity + 1), pub(public_capacity + 1);

    for (int i = 0; i < proofs; i++) {
        unsigned long long proof_size = proof.size(), public_size = pub.size();
        started = std::chrono::steady_clock::now();
        const int rc = groth16_prover_prove(prover, wtns.data(), wtns.size(), proof.data(),
                                            &proof_size, pub.data(), &public_size, error,
                                            sizeof error);
        const double ms = ms_since(started);
        if (rc != PROVER_OK) {
            std::fprintf(stderr, "groth16_prover_prove (%d): %s\n", rc, error);
            return 1;
        }
        std::printf("proof_ms %.3f\n", ms);
        std::fflush(stdout);
        if (i + 1 == proofs && argc == 6) {
            write_file(argv[4], std::string(proof.data(), proof_size));
            write_file(argv[5], std::string(pub.data(), public_size));
        }
    }
    groth16_prover_destroy(prover);
    return 0;
}
