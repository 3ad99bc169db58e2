// Times gnark-crypto's BN254 MultiExp on the inputs that enygma-msm's `peer_msm` example
// writes, and prints the median and the result, for benches/peers/run.sh.
//
//	go run . <inputs dir> <g1|g2> <log2 size> <threads> <runs>
//
// Inputs (big-endian, canonical, 2^16 entries; the first 2^log are used): scalars.bin (32 bytes
// each), g1.bin (x, y: 64 bytes), g2.bin (x.c0, x.c1, y.c0, y.c1: 128 bytes).
package main

import (
	"fmt"
	"os"
	"path/filepath"
	"runtime"
	"slices"
	"strconv"
	"time"

	"github.com/consensys/gnark-crypto/ecc"
	"github.com/consensys/gnark-crypto/ecc/bn254"
	"github.com/consensys/gnark-crypto/ecc/bn254/fp"
	"github.com/consensys/gnark-crypto/ecc/bn254/fr"
)

func read(dir, name string, n, size int) []byte {
	data, err := os.ReadFile(filepath.Join(dir, name))
	if err != nil || len(data) < n*size {
		panic(fmt.Sprintf("%s: need %d entries of %d bytes (%v)", name, n, size, err))
	}
	return data[:n*size]
}

func element(b []byte) (e fp.Element) {
	e.SetBytes(b)
	return
}

func main() {
	dir, group := os.Args[1], os.Args[2]
	log, _ := strconv.Atoi(os.Args[3])
	threads, _ := strconv.Atoi(os.Args[4])
	runs, _ := strconv.Atoi(os.Args[5])
	n := 1 << log
	runtime.GOMAXPROCS(threads)
	config := ecc.MultiExpConfig{NbTasks: threads}

	raw := read(dir, "scalars.bin", n, 32)
	scalars := make([]fr.Element, n)
	for i := range scalars {
		scalars[i].SetBytes(raw[32*i : 32*i+32])
	}

	var msm func() string
	switch group {
	case "g1":
		raw := read(dir, "g1.bin", n, 64)
		points := make([]bn254.G1Affine, n)
		for i := range points {
			p := raw[64*i:]
			points[i] = bn254.G1Affine{X: element(p[:32]), Y: element(p[32:64])}
		}
		msm = func() string {
			var r bn254.G1Affine
			if _, err := r.MultiExp(points, scalars, config); err != nil {
				panic(err)
			}
			x, y := r.X.Bytes(), r.Y.Bytes()
			return fmt.Sprintf("%x %x", x, y)
		}
	case "g2":
		raw := read(dir, "g2.bin", n, 128)
		points := make([]bn254.G2Affine, n)
		for i := range points {
			p := raw[128*i:]
			points[i].X.A0, points[i].X.A1 = element(p[:32]), element(p[32:64])
			points[i].Y.A0, points[i].Y.A1 = element(p[64:96]), element(p[96:128])
		}
		msm = func() string {
			var r bn254.G2Affine
			if _, err := r.MultiExp(points, scalars, config); err != nil {
				panic(err)
			}
			x0, x1, y0, y1 := r.X.A0.Bytes(), r.X.A1.Bytes(), r.Y.A0.Bytes(), r.Y.A1.Bytes()
			return fmt.Sprintf("%x%x %x%x", x0, x1, y0, y1)
		}
	default:
		panic("group must be g1 or g2")
	}

	result := msm() // warm-up
	times := make([]float64, runs)
	for i := range times {
		started := time.Now()
		if msm() != result {
			panic("MultiExp gave two different results")
		}
		times[i] = float64(time.Since(started).Microseconds()) / 1e3
	}
	slices.Sort(times)
	fmt.Printf("gnark %s 2^%d threads=%d median_ms=%.2f result=%s\n", group, log, threads, times[runs/2], result)
}
