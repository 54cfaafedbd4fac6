#include "textflag.h"

// ARGS loads every kernel's arguments: dst, a and b, and their length.
#define ARGS \
	MOVQ dst+0(FP), DI \
	MOVQ a+8(FP), SI \
	MOVQ b+16(FP), DX \
	MOVQ n+24(FP), CX

// NEXT moves past a step of BYTES bytes of each buffer, and counts off
// COUNT of the length.
#define NEXT(BYTES, COUNT) \
	ADDQ $BYTES, SI \
	ADDQ $BYTES, DX \
	ADDQ $BYTES, DI \
	SUBQ $COUNT, CX

// KERNEL is dst[i] = a[i] op b[i] over n bytes: four vectors (128 bytes) at
// a time, then one (32), then single elements. It loads before it stores
// in every step, so dst may alias a or b exactly.
#define KERNEL(VOP, SOP, SMOV, ELEM) \
	ARGS \
block: \
	CMPQ CX, $128 \
	JL   vector \
	VMOVUPS (SI), Y0 \
	VMOVUPS 32(SI), Y1 \
	VMOVUPS 64(SI), Y2 \
	VMOVUPS 96(SI), Y3 \
	VOP (DX), Y0, Y0 \
	VOP 32(DX), Y1, Y1 \
	VOP 64(DX), Y2, Y2 \
	VOP 96(DX), Y3, Y3 \
	VMOVUPS Y0, (DI) \
	VMOVUPS Y1, 32(DI) \
	VMOVUPS Y2, 64(DI) \
	VMOVUPS Y3, 96(DI) \
	NEXT(128, 128) \
	JMP  block \
vector: \
	CMPQ CX, $32 \
	JL   scalar \
	VMOVUPS (SI), Y0 \
	VOP (DX), Y0, Y0 \
	VMOVUPS Y0, (DI) \
	NEXT(32, 32) \
	JMP  vector \
scalar: \
	TESTQ CX, CX \
	JE    done \
	SMOV (SI), X0 \
	SOP (DX), X0, X0 \
	SMOV X0, (DI) \
	NEXT(ELEM, ELEM) \
	JMP  scalar \
done: \
	VZEROUPPER \
	RET

// func addF32(dst, a, b unsafe.Pointer, n int)
TEXT ·addF32(SB), NOSPLIT, $0-32
	KERNEL(VADDPS, VADDSS, VMOVSS, 4)

// func mulF32(dst, a, b unsafe.Pointer, n int)
TEXT ·mulF32(SB), NOSPLIT, $0-32
	KERNEL(VMULPS, VMULSS, VMOVSS, 4)

// func addF64(dst, a, b unsafe.Pointer, n int)
TEXT ·addF64(SB), NOSPLIT, $0-32
	KERNEL(VADDPD, VADDSD, VMOVSD, 8)

// func mulF64(dst, a, b unsafe.Pointer, n int)
TEXT ·mulF64(SB), NOSPLIT, $0-32
	KERNEL(VMULPD, VMULSD, VMOVSD, 8)

// HALF16 is dst[i] = a[i] op b[i] over n bytes of float16, n a multiple
// of 16 (eight elements): F16C widens them to float32, and rounds the
// result back to nearest even, quieting NaNs and keeping their top payload
// bits, as tensor.Float16FromFloat32 does.
#define HALF16(VOP) \
	ARGS \
loop: \
	CMPQ CX, $16 \
	JL   done \
	VCVTPH2PS (SI), Y0 \
	VCVTPH2PS (DX), Y1 \
	VOP Y1, Y0, Y0 \
	VCVTPS2PH $0, Y0, X0 \
	VMOVDQU X0, (DI) \
	NEXT(16, 16) \
	JMP  loop \
done: \
	VZEROUPPER \
	RET

// func addF16(dst, a, b unsafe.Pointer, n int)
TEXT ·addF16(SB), NOSPLIT, $0-32
	HALF16(VADDPS)

// func mulF16(dst, a, b unsafe.Pointer, n int)
TEXT ·mulF16(SB), NOSPLIT, $0-32
	HALF16(VMULPS)

// BRAIN16 is dst[i] = a[i] op b[i] over n bytes of bfloat16, n a
// multiple of 16 (eight elements): widening is a shift; rounding back adds
// 0x7fff and the lowest kept bit, and a NaN keeps its top half with the
// quiet bit set, as tensor.BFloat16FromFloat32 does.
#define BRAIN16(VOP) \
	ARGS \
	MOVL $1, AX \
	VMOVD AX, X8 \
	VPBROADCASTD X8, Y8 \
	MOVL $0x7fff, AX \
	VMOVD AX, X9 \
	VPBROADCASTD X9, Y9 \
	MOVL $0x40, AX \
	VMOVD AX, X10 \
	VPBROADCASTD X10, Y10 \
loop: \
	CMPQ CX, $16 \
	JL   done \
	VPMOVZXWD (SI), Y0 \
	VPMOVZXWD (DX), Y1 \
	VPSLLD $16, Y0, Y0 \
	VPSLLD $16, Y1, Y1 \
	VOP Y1, Y0, Y0 \
	VCMPPS $3, Y0, Y0, Y2 \
	VPSRLD $16, Y0, Y3 \
	VPAND Y8, Y3, Y4 \
	VPADDD Y9, Y0, Y5 \
	VPADDD Y4, Y5, Y5 \
	VPSRLD $16, Y5, Y5 \
	VPOR Y10, Y3, Y6 \
	VBLENDVPS Y2, Y6, Y5, Y5 \
	VPACKUSDW Y5, Y5, Y5 \
	VPERMQ $0x08, Y5, Y5 \
	VMOVDQU X5, (DI) \
	NEXT(16, 16) \
	JMP  loop \
done: \
	VZEROUPPER \
	RET

// func addBF16(dst, a, b unsafe.Pointer, n int)
TEXT ·addBF16(SB), NOSPLIT, $0-32
	BRAIN16(VADDPS)

// func mulBF16(dst, a, b unsafe.Pointer, n int)
TEXT ·mulBF16(SB), NOSPLIT, $0-32
	BRAIN16(VMULPS)

// MINMAX is dst[i] = min or max(a[i], b[i]) over n bytes, n a multiple of
// 32, with Go's rules, which the vector instruction alone does not keep: a
// NaN operand gives NaN (a+b carries it), and of equal operands, ±0 among
// them, min takes a|b (-0 below +0) and max a&b.
#define MINMAX(VOP, VMERGE, VADD, VCMP, VBLEND) \
	ARGS \
loop: \
	CMPQ CX, $32 \
	JL   done \
	VMOVUPS (SI), Y0 \
	VMOVUPS (DX), Y1 \
	VOP Y1, Y0, Y2 \
	VCMP $0, Y1, Y0, Y3 \
	VMERGE Y1, Y0, Y4 \
	VBLEND Y3, Y4, Y2, Y2 \
	VCMP $3, Y1, Y0, Y3 \
	VADD Y1, Y0, Y4 \
	VBLEND Y3, Y4, Y2, Y2 \
	VMOVUPS Y2, (DI) \
	NEXT(32, 32) \
	JMP  loop \
done: \
	VZEROUPPER \
	RET

// func minF32(dst, a, b unsafe.Pointer, n int)
TEXT ·minF32(SB), NOSPLIT, $0-32
	MINMAX(VMINPS, VORPS, VADDPS, VCMPPS, VBLENDVPS)

// func maxF32(dst, a, b unsafe.Pointer, n int)
TEXT ·maxF32(SB), NOSPLIT, $0-32
	MINMAX(VMAXPS, VANDPS, VADDPS, VCMPPS, VBLENDVPS)

// func minF64(dst, a, b unsafe.Pointer, n int)
TEXT ·minF64(SB), NOSPLIT, $0-32
	MINMAX(VMINPD, VORPD, VADDPD, VCMPPD, VBLENDVPD)

// func maxF64(dst, a, b unsafe.Pointer, n int)
TEXT ·maxF64(SB), NOSPLIT, $0-32
	MINMAX(VMAXPD, VANDPD, VADDPD, VCMPPD, VBLENDVPD)

// LOADBLOCK loads a block of four vectors of a into Y0-Y3 and of b into
// Y4-Y7; STOREBLOCK stores Y0-Y3 to dst.
#define LOADBLOCK \
	VMOVDQU (SI), Y0 \
	VMOVDQU 32(SI), Y1 \
	VMOVDQU 64(SI), Y2 \
	VMOVDQU 96(SI), Y3 \
	VMOVDQU (DX), Y4 \
	VMOVDQU 32(DX), Y5 \
	VMOVDQU 64(DX), Y6 \
	VMOVDQU 96(DX), Y7

#define STOREBLOCK \
	VMOVDQU Y0, (DI) \
	VMOVDQU Y1, 32(DI) \
	VMOVDQU Y2, 64(DI) \
	VMOVDQU Y3, 96(DI)

// WHOLE is dst[i] = a[i] op b[i] over n bytes, n a multiple of 32, for
// the integer instructions, which wrap as Go's integers do: four vectors a
// step, then one.
#define WHOLE(VOP) \
	ARGS \
block: \
	CMPQ CX, $128 \
	JL   vector \
	LOADBLOCK \
	VOP Y4, Y0, Y0 \
	VOP Y5, Y1, Y1 \
	VOP Y6, Y2, Y2 \
	VOP Y7, Y3, Y3 \
	STOREBLOCK \
	NEXT(128, 128) \
	JMP  block \
vector: \
	CMPQ CX, $32 \
	JL   done \
	VMOVDQU (SI), Y0 \
	VMOVDQU (DX), Y4 \
	VOP Y4, Y0, Y0 \
	VMOVDQU Y0, (DI) \
	NEXT(32, 32) \
	JMP  vector \
done: \
	VZEROUPPER \
	RET

// func addI8(dst, a, b unsafe.Pointer, n int)
TEXT ·addI8(SB), NOSPLIT, $0-32
	WHOLE(VPADDB)

// func addI16(dst, a, b unsafe.Pointer, n int)
TEXT ·addI16(SB), NOSPLIT, $0-32
	WHOLE(VPADDW)

// func addI32(dst, a, b unsafe.Pointer, n int)
TEXT ·addI32(SB), NOSPLIT, $0-32
	WHOLE(VPADDD)

// func addI64(dst, a, b unsafe.Pointer, n int)
TEXT ·addI64(SB), NOSPLIT, $0-32
	WHOLE(VPADDQ)

// func mulI16(dst, a, b unsafe.Pointer, n int)
TEXT ·mulI16(SB), NOSPLIT, $0-32
	WHOLE(VPMULLW)

// func mulI32(dst, a, b unsafe.Pointer, n int)
TEXT ·mulI32(SB), NOSPLIT, $0-32
	WHOLE(VPMULLD)

// func minS8(dst, a, b unsafe.Pointer, n int)
TEXT ·minS8(SB), NOSPLIT, $0-32
	WHOLE(VPMINSB)

// func minS16(dst, a, b unsafe.Pointer, n int)
TEXT ·minS16(SB), NOSPLIT, $0-32
	WHOLE(VPMINSW)

// func minS32(dst, a, b unsafe.Pointer, n int)
TEXT ·minS32(SB), NOSPLIT, $0-32
	WHOLE(VPMINSD)

// func maxS8(dst, a, b unsafe.Pointer, n int)
TEXT ·maxS8(SB), NOSPLIT, $0-32
	WHOLE(VPMAXSB)

// func maxS16(dst, a, b unsafe.Pointer, n int)
TEXT ·maxS16(SB), NOSPLIT, $0-32
	WHOLE(VPMAXSW)

// func maxS32(dst, a, b unsafe.Pointer, n int)
TEXT ·maxS32(SB), NOSPLIT, $0-32
	WHOLE(VPMAXSD)

// func minU8(dst, a, b unsafe.Pointer, n int)
TEXT ·minU8(SB), NOSPLIT, $0-32
	WHOLE(VPMINUB)

// func minU16(dst, a, b unsafe.Pointer, n int)
TEXT ·minU16(SB), NOSPLIT, $0-32
	WHOLE(VPMINUW)

// func minU32(dst, a, b unsafe.Pointer, n int)
TEXT ·minU32(SB), NOSPLIT, $0-32
	WHOLE(VPMINUD)

// func maxU8(dst, a, b unsafe.Pointer, n int)
TEXT ·maxU8(SB), NOSPLIT, $0-32
	WHOLE(VPMAXUB)

// func maxU16(dst, a, b unsafe.Pointer, n int)
TEXT ·maxU16(SB), NOSPLIT, $0-32
	WHOLE(VPMAXUW)

// func maxU32(dst, a, b unsafe.Pointer, n int)
TEXT ·maxU32(SB), NOSPLIT, $0-32
	WHOLE(VPMAXUD)

// PAIRS is WHOLE for the operations that take several instructions:
// STEP(A, B, OFF) leaves a[i] op b[i] in A, given a vector of a in A and
// one of b in B, read at offset OFF of SI and DX, where a step may read
// them again in another form. It may overwrite B and Y8-Y11; Y12-Y15 hold
// the constants the caller broadcast first. The four vectors of a block
// share those temporaries, which the CPU renames.
#define PAIRS(STEP) \
	ARGS \
block: \
	CMPQ CX, $128 \
	JL   vector \
	LOADBLOCK \
	STEP(Y0, Y4, 0) \
	STEP(Y1, Y5, 32) \
	STEP(Y2, Y6, 64) \
	STEP(Y3, Y7, 96) \
	STOREBLOCK \
	NEXT(128, 128) \
	JMP  block \
vector: \
	CMPQ CX, $32 \
	JL   done \
	VMOVDQU (SI), Y0 \
	VMOVDQU (DX), Y4 \
	STEP(Y0, Y4, 0) \
	VMOVDQU Y0, (DI) \
	NEXT(32, 32) \
	JMP  vector \
done: \
	VZEROUPPER \
	RET

// SPLAT16 and SPLAT64 broadcast IMM to every 16- or 64-bit lane of Y (X
// being its lower half).
#define SPLAT16(IMM, X, Y) \
	MOVL $IMM, AX \
	VMOVD AX, X \
	VPBROADCASTW X, Y

#define SPLAT64(IMM, X, Y) \
	MOVQ $IMM, AX \
	VMOVQ AX, X \
	VPBROADCASTQ X, Y

// MUL8 is a[i]*b[i] of bytes, wrapping, with 16-bit multiplies (Y12 =
// 0x00ff): an even byte's product is the low byte of its word's product,
// and an odd byte's the high byte of (a & 0xff00) * (b >> 8).
#define MUL8(A, B, OFF) \
	VPMULLW B, A, Y8 \
	VPAND Y12, Y8, Y8 \
	VPANDN A, Y12, Y9 \
	VPSRLW $8, B, B \
	VPMULLW B, Y9, Y9 \
	VPOR Y9, Y8, A

// MUL64 is the low 64 bits of a[i]*b[i], the same for signed and unsigned
// operands, from 32-bit multiplies: lo·lo + (hi·lo + lo·hi) << 32.
#define MUL64(A, B, OFF) \
	VPMULUDQ B, A, Y8 \
	VPSRLQ $32, A, Y9 \
	VPMULUDQ B, Y9, Y9 \
	VPSRLQ $32, B, B \
	VPMULUDQ B, A, B \
	VPADDQ B, Y9, Y9 \
	VPSLLQ $32, Y9, Y9 \
	VPADDQ Y9, Y8, A

// MINS64 and MAXS64 pick b[i] where a[i] > b[i], or b[i] > a[i]: AVX2
// compares 64-bit integers only for greater, and signed.
#define MINS64(A, B, OFF) \
	VPCMPGTQ B, A, Y8 \
	VPBLENDVB Y8, B, A, A

#define MAXS64(A, B, OFF) \
	VPCMPGTQ A, B, Y8 \
	VPBLENDVB Y8, B, A, A

// MINU64 and MAXU64 do the same unsigned, comparing the operands with
// their top bits flipped (Y12 = 1<<63), which orders them as signed.
#define MINU64(A, B, OFF) \
	VPXOR Y12, A, Y8 \
	VPXOR Y12, B, Y9 \
	VPCMPGTQ Y9, Y8, Y8 \
	VPBLENDVB Y8, B, A, A

#define MAXU64(A, B, OFF) \
	VPXOR Y12, A, Y8 \
	VPXOR Y12, B, Y9 \
	VPCMPGTQ Y8, Y9, Y8 \
	VPBLENDVB Y8, B, A, A

// The half types' min and max work on their bits, sixteen elements a
// vector, with Y12 = 0x7fff, Y13 the format's +Inf and Y14 its quiet NaN.
// The portable loops widen both operands to float32 exactly, and Go's
// min(x, y) of float32 is whichever is below the other, or else x|y, bit
// by bit; max(x, y) is whichever is above, or else x|y with the sign bit
// only where both have it. So -0 and +0 give -0 and +0 and any other equal
// operands themselves, and a NaN operand gives a NaN that merges both
// operands' widened bits, quieted by the rounding back. The kernels pick
// the operand by integer compares, and compute the NaN alike.
//
// HALFPAIRS is PAIRS for them, which first finds from the largest
// magnitude in a block (a vector) whether it holds a NaN: if not, the
// common case, it takes the FAST steps, which just pick an operand, and if
// so the FULL steps.
#define HALFPAIRS(FAST, FULL) \
	ARGS \
block: \
	CMPQ CX, $128 \
	JL   vector \
	LOADBLOCK \
	VPAND Y12, Y0, Y8 \
	HALFMAG(Y1) \
	HALFMAG(Y2) \
	HALFMAG(Y3) \
	HALFMAG(Y4) \
	HALFMAG(Y5) \
	HALFMAG(Y6) \
	HALFMAG(Y7) \
	VPCMPGTW Y13, Y8, Y8 \
	VPTEST Y8, Y8 \
	JNE  blocknan \
	FAST(Y0, Y4, 0) \
	FAST(Y1, Y5, 32) \
	FAST(Y2, Y6, 64) \
	FAST(Y3, Y7, 96) \
	JMP  blockstore \
blocknan: \
	FULL(Y0, Y4, 0) \
	FULL(Y1, Y5, 32) \
	FULL(Y2, Y6, 64) \
	FULL(Y3, Y7, 96) \
blockstore: \
	STOREBLOCK \
	NEXT(128, 128) \
	JMP  block \
vector: \
	CMPQ CX, $32 \
	JL   done \
	VMOVDQU (SI), Y0 \
	VMOVDQU (DX), Y4 \
	HALFNAN(Y0, Y4) \
	VPTEST Y11, Y11 \
	JNE  vectornan \
	FAST(Y0, Y4, 0) \
	JMP  vectorstore \
vectornan: \
	FULL(Y0, Y4, 0) \
vectorstore: \
	VMOVDQU Y0, (DI) \
	NEXT(32, 32) \
	JMP  vector \
done: \
	VZEROUPPER \
	RET

// HALFMAG folds X's magnitude bits into Y8's largest, overwriting Y9.
#define HALFMAG(X) \
	VPAND Y12, X, Y9 \
	VPMAXSW Y9, Y8, Y8

// HALFMIN and HALFMAX pick the lesser or greater of a[i] and b[i], neither
// a NaN, overwriting Y8 and Y9. Their bits compare as 16-bit integers as
// their values do, -0 below +0, but where both signs are set, which
// reverses the order; the same bits may pick either.
#define HALFMIN(A, B, OFF) \
	VPCMPGTW B, A, Y8 \
	VPAND B, A, Y9 \
	VPSRAW $15, Y9, Y9 \
	VPXOR Y9, Y8, Y8 \
	VPBLENDVB Y8, B, A, A

#define HALFMAX(A, B, OFF) \
	VPCMPGTW A, B, Y8 \
	VPAND B, A, Y9 \
	VPSRAW $15, Y9, Y9 \
	VPXOR Y9, Y8, Y8 \
	VPBLENDVB Y8, B, A, A

// HALFNAN sets every bit of Y11 where a[i] or b[i] is a NaN, its magnitude
// bits above +Inf's, overwriting Y8.
#define HALFNAN(A, B) \
	VPAND Y12, A, Y11 \
	VPAND Y12, B, Y8 \
	VPMAXSW Y8, Y11, Y11 \
	VPCMPGTW Y13, Y11, Y11

// HALFNANPICK is PICK(A, B) with the NaN in Y10 blended in where a[i] or
// b[i] is one.
#define HALFNANPICK(PICK, A, B) \
	HALFNAN(A, B) \
	PICK(A, B, 0) \
	VPBLENDVB Y11, Y10, A, A

// BF16MIN and BF16MAX: bfloat16 widens by a shift, so the merged NaN is
// a|b, quieted; for max, (a|b) & ((a&b) | 0x7fff), which keeps the sign
// only where both have it.
#define BF16MIN(A, B, OFF) \
	VPOR B, A, Y10 \
	VPOR Y14, Y10, Y10 \
	HALFNANPICK(HALFMIN, A, B)

#define BF16MAX(A, B, OFF) \
	VPAND B, A, Y10 \
	VPOR Y12, Y10, Y10 \
	VPOR B, A, Y11 \
	VPAND Y11, Y10, Y10 \
	VPOR Y14, Y10, Y10 \
	HALFNANPICK(HALFMAX, A, B)

// F16NAN sets Y10 to the float16 NaN that a[i] and b[i] merge into, given
// SIGN(B, A, Y11) the instruction that merges their signs (VPOR for min,
// VPAND for max). Widening a subnormal float16 normalizes its mantissa, so
// the merged mantissa is that of both operands widened (F16C), or'd, and
// cut to ten bits, as rounding a NaN back keeps them.
#define F16NAN(SIGN, A, B, OFF) \
	VCVTPH2PS OFF(SI), Y8 \
	VCVTPH2PS OFF(DX), Y9 \
	VPOR Y9, Y8, Y8 \
	VCVTPH2PS OFF+16(SI), Y10 \
	VCVTPH2PS OFF+16(DX), Y11 \
	VPOR Y11, Y10, Y10 \
	VPSLLD $9, Y8, Y8 \
	VPSRLD $22, Y8, Y8 \
	VPSLLD $9, Y10, Y10 \
	VPSRLD $22, Y10, Y10 \
	VPACKUSDW Y10, Y8, Y10 \
	VPERMQ $0xd8, Y10, Y10 \
	SIGN B, A, Y11 \
	VPANDN Y11, Y12, Y11 \
	VPOR Y11, Y10, Y10 \
	VPOR Y14, Y10, Y10

#define F16MIN(A, B, OFF) \
	F16NAN(VPOR, A, B, OFF) \
	HALFNANPICK(HALFMIN, A, B)

#define F16MAX(A, B, OFF) \
	F16NAN(VPAND, A, B, OFF) \
	HALFNANPICK(HALFMAX, A, B)

// HALFCONST broadcasts the half-type constants: INF is +Inf's bits and
// QNAN a quiet NaN's.
#define HALFCONST(INF, QNAN) \
	SPLAT16(0x7fff, X12, Y12) \
	SPLAT16(INF, X13, Y13) \
	SPLAT16(QNAN, X14, Y14)

// func mulI8(dst, a, b unsafe.Pointer, n int)
TEXT ·mulI8(SB), NOSPLIT, $0-32
	SPLAT16(0x00ff, X12, Y12)
	PAIRS(MUL8)

// func mulI64(dst, a, b unsafe.Pointer, n int)
TEXT ·mulI64(SB), NOSPLIT, $0-32
	PAIRS(MUL64)

// func minS64(dst, a, b unsafe.Pointer, n int)
TEXT ·minS64(SB), NOSPLIT, $0-32
	PAIRS(MINS64)

// func maxS64(dst, a, b unsafe.Pointer, n int)
TEXT ·maxS64(SB), NOSPLIT, $0-32
	PAIRS(MAXS64)

// func minU64(dst, a, b unsafe.Pointer, n int)
TEXT ·minU64(SB), NOSPLIT, $0-32
	SPLAT64(0x8000000000000000, X12, Y12)
	PAIRS(MINU64)

// func maxU64(dst, a, b unsafe.Pointer, n int)
TEXT ·maxU64(SB), NOSPLIT, $0-32
	SPLAT64(0x8000000000000000, X12, Y12)
	PAIRS(MAXU64)

// func minBF16(dst, a, b unsafe.Pointer, n int)
TEXT ·minBF16(SB), NOSPLIT, $0-32
	HALFCONST(0x7f80, 0x7fc0)
	HALFPAIRS(HALFMIN, BF16MIN)

// func maxBF16(dst, a, b unsafe.Pointer, n int)
TEXT ·maxBF16(SB), NOSPLIT, $0-32
	HALFCONST(0x7f80, 0x7fc0)
	HALFPAIRS(HALFMAX, BF16MAX)

// func minF16(dst, a, b unsafe.Pointer, n int)
TEXT ·minF16(SB), NOSPLIT, $0-32
	HALFCONST(0x7c00, 0x7e00)
	HALFPAIRS(HALFMIN, F16MIN)

// func maxF16(dst, a, b unsafe.Pointer, n int)
TEXT ·maxF16(SB), NOSPLIT, $0-32
	HALFCONST(0x7c00, 0x7e00)
	HALFPAIRS(HALFMAX, F16MAX)

// ZPAIRS is PAIRS for AVX-512: four 64-byte vectors a step, then one,
// then the last elements under the mask K1, whose masked-off elements are
// neither loaded (so they cannot fault) nor stored; n need only be a
// multiple of an element, of 1<<SHIFT bytes, which MOV moves and the mask
// counts. STEP(A, B) leaves a[i] op b[i] in A, and may overwrite B, Z8-Z11
// and K2; Z12-Z15 and K4 hold the constants the caller set first.
#define ZPAIRS(MOV, SHIFT, STEP) \
	ARGS \
block: \
	CMPQ CX, $256 \
	JL   vector \
	MOV (SI), Z0 \
	MOV 64(SI), Z1 \
	MOV 128(SI), Z2 \
	MOV 192(SI), Z3 \
	MOV (DX), Z4 \
	MOV 64(DX), Z5 \
	MOV 128(DX), Z6 \
	MOV 192(DX), Z7 \
	STEP(Z0, Z4) \
	STEP(Z1, Z5) \
	STEP(Z2, Z6) \
	STEP(Z3, Z7) \
	MOV Z0, (DI) \
	MOV Z1, 64(DI) \
	MOV Z2, 128(DI) \
	MOV Z3, 192(DI) \
	NEXT(256, 256) \
	JMP  block \
vector: \
	CMPQ CX, $64 \
	JL   tail \
	MOV (SI), Z0 \
	MOV (DX), Z4 \
	STEP(Z0, Z4) \
	MOV Z0, (DI) \
	NEXT(64, 64) \
	JMP  vector \
tail: \
	TESTQ CX, CX \
	JE    done \
	SHRQ $SHIFT, CX \
	MOVQ $1, AX \
	SHLQ CX, AX \
	DECQ AX \
	KMOVQ AX, K1 \
	MOV.Z (SI), K1, Z0 \
	MOV.Z (DX), K1, Z4 \
	STEP(Z0, Z4) \
	MOV Z0, K1, (DI) \
done: \
	VZEROUPPER \
	RET

// ZRANGE is min (IMM 4) or max (IMM 5) with Go's rules: VRANGE picks
// the lesser or greater operand, -0 below +0 (bits 3:2 of IMM take the
// sign from the compare), but gives the other operand for a NaN, so a+b,
// which carries it, is blended in where either is one.
#define ZRANGE(RANGE, IMM, VADD, VCMP, VMOV, A, B) \
	VCMP $3, B, A, K2 \
	VADD B, A, Z8 \
	RANGE $IMM, B, A, A \
	VMOV Z8, K2, A

#define ZMINPS(A, B) ZRANGE(VRANGEPS, 4, VADDPS, VCMPPS, VMOVDQU32, A, B)
#define ZMAXPS(A, B) ZRANGE(VRANGEPS, 5, VADDPS, VCMPPS, VMOVDQU32, A, B)
#define ZMINPD(A, B) ZRANGE(VRANGEPD, 4, VADDPD, VCMPPD, VMOVDQU64, A, B)
#define ZMAXPD(A, B) ZRANGE(VRANGEPD, 5, VADDPD, VCMPPD, VMOVDQU64, A, B)

// ZBF16 is BRAIN16 for AVX-512, 32 elements a vector and none moved
// across lanes: an element in the top half of its 32-bit lane widens by a
// mask, one in the bottom half by a shift, and they round back apart, the
// bottom ones shifted back down and the top ones merged over them (K4 =
// 0xaaaaaaaa picks the odd words). Z12 = 0xffff0000, Z13 = 1, Z14 =
// 0x7fff and Z15 = the quiet bit, 0x400000, in each 32-bit lane.
// VCVTNEPS2BF16 (AVX512_BF16) would round in one instruction, but it
// flushes subnormals to zero, which the portable loop keeps.
#define ZBF16(VOP, A, B) \
	VPSLLD $16, A, Z8 \
	VPSLLD $16, B, Z9 \
	VPANDD Z12, A, A \
	VPANDD Z12, B, B \
	VOP Z9, Z8, Z8 \
	VOP B, A, A \
	ZBF16ROUND(Z8, Z9) \
	ZBF16ROUND(A, B) \
	VPSRLD $16, Z9, A \
	VMOVDQU16 B, K4, A

// ZBF16ROUND leaves in OUT's top halves float32 R rounded to bfloat16 as
// tensor.BFloat16FromFloat32 does: R + 0x7fff + the lowest kept bit, or a
// NaN's top half with the quiet bit set.
#define ZBF16ROUND(R, OUT) \
	VCMPPS $3, R, R, K2 \
	VPSRLD $16, R, OUT \
	VPANDD Z13, OUT, OUT \
	VPADDD Z14, OUT, OUT \
	VPADDD R, OUT, OUT \
	VPORD Z15, R, K2, OUT

#define ZADDBF16(A, B) ZBF16(VADDPS, A, B)
#define ZMULBF16(A, B) ZBF16(VMULPS, A, B)

// ZBF16CONST sets ZBF16's constants.
#define ZBF16CONST \
	MOVL $0xffff0000, AX \
	VPBROADCASTD AX, Z12 \
	MOVL $1, AX \
	VPBROADCASTD AX, Z13 \
	MOVL $0x7fff, AX \
	VPBROADCASTD AX, Z14 \
	MOVL $0x400000, AX \
	VPBROADCASTD AX, Z15 \
	MOVL $0xaaaaaaaa, AX \
	KMOVD AX, K4

// func minF32Z(dst, a, b unsafe.Pointer, n int)
TEXT ·minF32Z(SB), NOSPLIT, $0-32
	ZPAIRS(VMOVDQU32, 2, ZMINPS)

// func maxF32Z(dst, a, b unsafe.Pointer, n int)
TEXT ·maxF32Z(SB), NOSPLIT, $0-32
	ZPAIRS(VMOVDQU32, 2, ZMAXPS)

// func minF64Z(dst, a, b unsafe.Pointer, n int)
TEXT ·minF64Z(SB), NOSPLIT, $0-32
	ZPAIRS(VMOVDQU64, 3, ZMINPD)

// func maxF64Z(dst, a, b unsafe.Pointer, n int)
TEXT ·maxF64Z(SB), NOSPLIT, $0-32
	ZPAIRS(VMOVDQU64, 3, ZMAXPD)

// func addBF16Z(dst, a, b unsafe.Pointer, n int)
TEXT ·addBF16Z(SB), NOSPLIT, $0-32
	ZBF16CONST
	ZPAIRS(VMOVDQU16, 1, ZADDBF16)

// func mulBF16Z(dst, a, b unsafe.Pointer, n int)
TEXT ·mulBF16Z(SB), NOSPLIT, $0-32
	ZBF16CONST
	ZPAIRS(VMOVDQU16, 1, ZMULBF16)

// func cpuid1ECX() uint32
TEXT ·cpuid1ECX(SB), NOSPLIT, $0-4
	MOVL $1, AX
	XORL CX, CX
	CPUID
	MOVL CX, ret+0(FP)
	RET
