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

// WHOLE is dst[i] = a[i] op b[i] over n bytes, n a multiple of 32, for
// the integer instructions, which wrap as Go's integers do: four vectors a
// step, then one.
#define WHOLE(VOP) \
	ARGS \
block: \
	CMPQ CX, $128 \
	JL   vector \
	VMOVDQU (SI), Y0 \
	VMOVDQU 32(SI), Y1 \
	VMOVDQU 64(SI), Y2 \
	VMOVDQU 96(SI), Y3 \
	VMOVDQU (DX), Y4 \
	VMOVDQU 32(DX), Y5 \
	VMOVDQU 64(DX), Y6 \
	VMOVDQU 96(DX), Y7 \
	VOP Y4, Y0, Y0 \
	VOP Y5, Y1, Y1 \
	VOP Y6, Y2, Y2 \
	VOP Y7, Y3, Y3 \
	VMOVDQU Y0, (DI) \
	VMOVDQU Y1, 32(DI) \
	VMOVDQU Y2, 64(DI) \
	VMOVDQU Y3, 96(DI) \
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

// func cpuid1ECX() uint32
TEXT ·cpuid1ECX(SB), NOSPLIT, $0-4
	MOVL $1, AX
	XORL CX, CX
	CPUID
	MOVL CX, ret+0(FP)
	RET
