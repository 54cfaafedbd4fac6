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

// HALF16 is dst[i] = a[i] op b[i] over n float16 elements, n a multiple
// of 8: F16C widens 8 at a time to float32, and rounds the result back to
// nearest even, quieting NaNs and keeping their top payload bits, as
// tensor.Float16FromFloat32 does.
#define HALF16(VOP) \
	ARGS \
loop: \
	CMPQ CX, $8 \
	JL   done \
	VCVTPH2PS (SI), Y0 \
	VCVTPH2PS (DX), Y1 \
	VOP Y1, Y0, Y0 \
	VCVTPS2PH $0, Y0, X0 \
	VMOVDQU X0, (DI) \
	NEXT(16, 8) \
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

// BRAIN16 is dst[i] = a[i] op b[i] over n bfloat16 elements, n a multiple
// of 8: widening is a shift; rounding back adds 0x7fff and the lowest kept
// bit, and a NaN keeps its top half with the quiet bit set, as
// tensor.BFloat16FromFloat32 does.
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
	CMPQ CX, $8 \
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
	NEXT(16, 8) \
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

// func cpuid1ECX() uint32
TEXT ·cpuid1ECX(SB), NOSPLIT, $0-4
	MOVL $1, AX
	XORL CX, CX
	CPUID
	MOVL CX, ret+0(FP)
	RET
