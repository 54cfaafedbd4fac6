#include "textflag.h"

// KERNEL is dst[i] = a[i] op b[i] over n bytes: four vectors (128 bytes) at
// a time, then one (32), then single elements. It loads before it stores
// in every step, so dst may alias a or b exactly.
#define KERNEL(VOP, SOP, SMOV, ELEM) \
	MOVQ dst+0(FP), DI \
	MOVQ a+8(FP), SI \
	MOVQ b+16(FP), DX \
	MOVQ n+24(FP), CX \
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
	ADDQ $128, SI \
	ADDQ $128, DX \
	ADDQ $128, DI \
	SUBQ $128, CX \
	JMP  block \
vector: \
	CMPQ CX, $32 \
	JL   scalar \
	VMOVUPS (SI), Y0 \
	VOP (DX), Y0, Y0 \
	VMOVUPS Y0, (DI) \
	ADDQ $32, SI \
	ADDQ $32, DX \
	ADDQ $32, DI \
	SUBQ $32, CX \
	JMP  vector \
scalar: \
	TESTQ CX, CX \
	JE    done \
	SMOV (SI), X0 \
	SOP (DX), X0, X0 \
	SMOV X0, (DI) \
	ADDQ $ELEM, SI \
	ADDQ $ELEM, DX \
	ADDQ $ELEM, DI \
	SUBQ $ELEM, CX \
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
