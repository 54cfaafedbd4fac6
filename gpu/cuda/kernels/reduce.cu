/*
 * reduce.cu: the reduction kernels, one per operator and dtype, with the
 * semantics of package reduce's portable loops (reduce.Combine,
 * reduce.Finish), bit for bit but for the payload of NaNs:
 *
 *	gc_<op>_<dtype>(T *dst, const T *a, const T *b, u64 n)   dst[i] = a[i] op b[i]
 *	gc_avg_<dtype>(T *buf, u64 n, S divisor)                 buf[i] /= divisor
 *	gc_premul_sum_<dtype>(T *buf, u64 n, S factor)           buf[i] *= factor
 *	gc_fold_<op>_<dtype>(const u64 *tab, u64 nsrc, u64 first, u64 ndst, u64 off, u64 n, S s)
 *		x = tab[0][i] op ... op tab[nsrc-1][i], finished (avg: x / s,
 *		premul_sum: x * s, others: x and s unused), stored at
 *		tab[first][i] ... tab[first+ndst-1][i], where tab[q][i] is
 *		element i of the array at byte address tab[q] + off
 *
 * op is sum, product, min, max, band, bor or bxor (avg and premul_sum
 * combine as sum); dtype is bool, i8 to i64, u8 to u64, f16, bf16, f32 or
 * f64, and op of a fold also avg or premul_sum. dst may be a or b, but
 * not overlap them otherwise; a fold's arrays may be the same, but not
 * overlap otherwise. n counts elements; each thread walks them with a
 * grid-stride loop, so any grid covers any n. A fold reads every array's
 * element i before it writes any, so it may store into its sources: one
 * kernel reduces the same elements of several ranks' buffers, which a
 * table in device memory lists, and hands the result to several.
 *
 * The same text is C: testdata/fakecuda.c includes it and runs these
 * kernels on the host, one simulated thread at a time, so the tests that
 * compare them with package reduce test this source, not a copy. That is
 * why it uses no C++ and no CUDA header, and spells bit casts through
 * GC_* macros. A fold's loops over the arrays stay rolled (GC_ROLLED):
 * unrolled, they nearly doubled the PTX, which the driver compiles at the
 * first reduction.
 *
 * Integers wrap: sums and products are computed in an unsigned type,
 * where overflow is defined. float16 and bfloat16 are raw bits, widened
 * to float32, combined, and rounded back to nearest even in integer
 * arithmetic, the same on every architecture. Min and max return NaN if
 * either operand is NaN and order -0 below +0, as Go's builtins do. The
 * PTX is built with -fmad=false, so that no multiply fuses with an add.
 */

#ifdef __CUDACC__
#define GC_DEV static __device__ __forceinline__
#define GC_GLOBAL extern "C" __global__ void
#define GC_F32_BITS(f) __float_as_uint(f)
#define GC_BITS_F32(u) __uint_as_float(u)
#define GC_F64_BITS(f) ((unsigned long long)__double_as_longlong(f))
#define GC_BITS_F64(u) __longlong_as_double((long long)(u))
#define GC_HOST_COMBINE(name, T)
#define GC_HOST_FINISH(name, T, S)
#define GC_HOST_FOLD(name, T, S)
#define GC_ROLLED _Pragma("unroll 1")
#else
/*
 * Included from C, which defines blockIdx, blockDim, gridDim and
 * threadIdx, and GC_HOST_COMBINE, GC_HOST_FINISH and GC_HOST_FOLD to
 * register each kernel, and includes <string.h>.
 */
#define GC_DEV static inline
#define GC_GLOBAL static void
GC_DEV unsigned gc_f32_bits(float f) { unsigned u; memcpy(&u, &f, sizeof u); return u; }
GC_DEV float gc_bits_f32(unsigned u) { float f; memcpy(&f, &u, sizeof f); return f; }
GC_DEV unsigned long long gc_f64_bits(double f) { unsigned long long u; memcpy(&u, &f, sizeof u); return u; }
GC_DEV double gc_bits_f64(unsigned long long u) { double f; memcpy(&f, &u, sizeof f); return f; }
#define GC_F32_BITS(f) gc_f32_bits(f)
#define GC_BITS_F32(u) gc_bits_f32(u)
#define GC_F64_BITS(f) gc_f64_bits(f)
#define GC_BITS_F64(u) gc_bits_f64(u)
#define GC_ROLLED
#endif

#define GC_FIRST ((unsigned long long)blockIdx.x * blockDim.x + threadIdx.x)
#define GC_STRIDE ((unsigned long long)gridDim.x * blockDim.x)

/*
 * The functions of one element, gc_add_i32 and so on, lo and hi being
 * min and max, whose names the kernels take.
 *
 * Integers: T is the type, U the unsigned type its arithmetic wraps in.
 */
#define GC_INT(sfx, T, U)                                                       \
	GC_DEV T gc_add_##sfx(T a, T b) { return (T)((U)a + (U)b); }            \
	GC_DEV T gc_mul_##sfx(T a, T b) { return (T)((U)a * (U)b); }            \
	GC_DEV T gc_lo_##sfx(T a, T b) { return a < b ? a : b; }                \
	GC_DEV T gc_hi_##sfx(T a, T b) { return a > b ? a : b; }                \
	GC_DEV T gc_and_##sfx(T a, T b) { return (T)(a & b); }                  \
	GC_DEV T gc_or_##sfx(T a, T b) { return (T)(a | b); }                   \
	GC_DEV T gc_xor_##sfx(T a, T b) { return (T)(a ^ b); }

GC_INT(i8, signed char, unsigned)
GC_INT(i16, short, unsigned)
GC_INT(i32, int, unsigned)
GC_INT(i64, long long, unsigned long long)
GC_INT(u8, unsigned char, unsigned)
GC_INT(u16, unsigned short, unsigned)
GC_INT(u32, unsigned, unsigned)
GC_INT(u64, unsigned long long, unsigned long long)

/* bool: any non-zero byte is true; results are 0 or 1. */
GC_DEV unsigned char gc_or_bool(unsigned char a, unsigned char b) { return (a | b) != 0; }
GC_DEV unsigned char gc_and_bool(unsigned char a, unsigned char b) { return (a != 0) & (b != 0); }
GC_DEV unsigned char gc_xor_bool(unsigned char a, unsigned char b) { return (a != 0) ^ (b != 0); }

/*
 * Native floats. Min and max of equal operands combine their bits, which
 * differ only for zeros of opposite signs: or keeps the minus of -0,
 * and keeps the plus of +0.
 */
GC_DEV float gc_add_f32(float a, float b) { return a + b; }
GC_DEV float gc_mul_f32(float a, float b) { return a * b; }
GC_DEV float gc_lo_f32(float a, float b)
{
	if (a != a || b != b)
		return a + b;
	if (a == b)
		return GC_BITS_F32(GC_F32_BITS(a) | GC_F32_BITS(b));
	return a < b ? a : b;
}
GC_DEV float gc_hi_f32(float a, float b)
{
	if (a != a || b != b)
		return a + b;
	if (a == b)
		return GC_BITS_F32(GC_F32_BITS(a) & GC_F32_BITS(b));
	return a > b ? a : b;
}

GC_DEV double gc_add_f64(double a, double b) { return a + b; }
GC_DEV double gc_mul_f64(double a, double b) { return a * b; }
GC_DEV double gc_lo_f64(double a, double b)
{
	if (a != a || b != b)
		return a + b;
	if (a == b)
		return GC_BITS_F64(GC_F64_BITS(a) | GC_F64_BITS(b));
	return a < b ? a : b;
}
GC_DEV double gc_hi_f64(double a, double b)
{
	if (a != a || b != b)
		return a + b;
	if (a == b)
		return GC_BITS_F64(GC_F64_BITS(a) & GC_F64_BITS(b));
	return a > b ? a : b;
}

/* float16 and bfloat16, as tensor.F16 and tensor.BF16 convert them. */
GC_DEV float gc_f16_f32(unsigned short h)
{
	unsigned bits = (unsigned)(h & 0x7fff) << 13;
	unsigned sign = (unsigned)(h & 0x8000) << 16;

	if ((h & 0x7c00) == 0x7c00) /* Inf or NaN, payload kept */
		return GC_BITS_F32(sign | 0x7f800000u | bits);
	if ((h & 0x7c00) == 0) { /* zero or subnormal: 2^-14·(1+m/1024) - 2^-14, exact */
		float f = GC_BITS_F32(bits + (113u << 23)) - GC_BITS_F32(113u << 23);
		return GC_BITS_F32(sign | GC_F32_BITS(f));
	}
	return GC_BITS_F32(sign | (bits + (112u << 23)));
}

GC_DEV unsigned short gc_f32_f16(float f)
{
	unsigned b = GC_F32_BITS(f);
	unsigned sign = (b >> 16) & 0x8000;
	int exp = (int)((b >> 23) & 0xff);
	unsigned mant = b & 0x7fffff;
	int e = exp - 127 + 15;
	unsigned h, rem;

	if (exp == 0xff) /* Inf, or NaN made quiet with its top payload bits */
		return (unsigned short)(sign | (mant ? 0x7e00 | (mant >> 13) : 0x7c00));
	if (e >= 0x1f)
		return (unsigned short)(sign | 0x7c00);
	if (e <= 0) {
		/* A subnormal result, or zero: the 24-bit significand shifted
		 * right by 14-e, rounded to nearest even; a carry into the
		 * exponent is the right encoding. */
		unsigned m = mant | 0x800000, shift, half;
		if (e < -10)
			return (unsigned short)sign;
		shift = (unsigned)(14 - e);
		h = m >> shift;
		rem = m & ((1u << shift) - 1);
		half = 1u << (shift - 1);
		if (rem > half || (rem == half && (h & 1)))
			h++;
		return (unsigned short)(sign | h);
	}
	h = (unsigned)e << 10 | mant >> 13;
	rem = mant & 0x1fff;
	if (rem > 0x1000 || (rem == 0x1000 && (h & 1)))
		h++; /* a carry into the exponent, even to Inf, is correct rounding */
	return (unsigned short)(sign | h);
}

GC_DEV float gc_bf16_f32(unsigned short h) { return GC_BITS_F32((unsigned)h << 16); }

GC_DEV unsigned short gc_f32_bf16(float f)
{
	unsigned b = GC_F32_BITS(f);

	if ((b & 0x7fffffff) > 0x7f800000) /* NaN, made quiet so that truncation keeps it NaN */
		return (unsigned short)((b >> 16) | 0x40);
	return (unsigned short)((b + 0x7fff + ((b >> 16) & 1)) >> 16);
}

#define GC_HALF(sfx)                                                            \
	GC_DEV unsigned short gc_add_##sfx(unsigned short a, unsigned short b)  \
	{                                                                       \
		return gc_f32_##sfx(gc_##sfx##_f32(a) + gc_##sfx##_f32(b));     \
	}                                                                       \
	GC_DEV unsigned short gc_mul_##sfx(unsigned short a, unsigned short b)  \
	{                                                                       \
		return gc_f32_##sfx(gc_##sfx##_f32(a) * gc_##sfx##_f32(b));     \
	}                                                                       \
	GC_DEV unsigned short gc_lo_##sfx(unsigned short a, unsigned short b)   \
	{                                                                       \
		return gc_f32_##sfx(gc_lo_f32(gc_##sfx##_f32(a), gc_##sfx##_f32(b))); \
	}                                                                       \
	GC_DEV unsigned short gc_hi_##sfx(unsigned short a, unsigned short b)   \
	{                                                                       \
		return gc_f32_##sfx(gc_hi_f32(gc_##sfx##_f32(a), gc_##sfx##_f32(b))); \
	}                                                                       \
	GC_DEV unsigned short gc_div_##sfx(unsigned short a, float d)           \
	{                                                                       \
		return gc_f32_##sfx(gc_##sfx##_f32(a) / d);                     \
	}                                                                       \
	GC_DEV unsigned short gc_scale_##sfx(unsigned short a, float c)         \
	{                                                                       \
		return gc_f32_##sfx(gc_##sfx##_f32(a) * c);                     \
	}

GC_HALF(f16)
GC_HALF(bf16)

/* The finishing steps: Avg divides (integers truncate toward zero, in
 * 64 bits, so the count need not fit in T), PreMulSum scales. */
#define GC_DIV(sfx, T, S)                                                       \
	GC_DEV T gc_div_##sfx(T a, S d) { return (T)((S)a / d); }
GC_DIV(i8, signed char, long long)
GC_DIV(i16, short, long long)
GC_DIV(i32, int, long long)
GC_DIV(i64, long long, long long)
GC_DIV(u8, unsigned char, unsigned long long)
GC_DIV(u16, unsigned short, unsigned long long)
GC_DIV(u32, unsigned, unsigned long long)
GC_DIV(u64, unsigned long long, unsigned long long)
GC_DIV(f32, float, float)
GC_DIV(f64, double, double)
GC_DEV float gc_scale_f32(float a, float c) { return a * c; }
GC_DEV double gc_scale_f64(double a, double c) { return a * c; }

/* A fold's finishing step for the ops that have none; each dtype's
 * comes with its kernels below. */
#define GC_KEEP(sfx, T, S)                                                      \
	GC_DEV T gc_keep_##sfx(T a, S s) { (void)s; return a; }

/* The kernels. */

#define GC_COMBINE(op, sfx, T, fn)                                              \
	GC_GLOBAL gc_##op##_##sfx(T *dst, const T *a, const T *b, unsigned long long n) \
	{                                                                       \
		for (unsigned long long i = GC_FIRST; i < n; i += GC_STRIDE)    \
			dst[i] = fn(a[i], b[i]);                                \
	}                                                                       \
	GC_HOST_COMBINE(gc_##op##_##sfx, T)

#define GC_FINISH(op, sfx, T, S, fn)                                            \
	GC_GLOBAL gc_##op##_##sfx(T *buf, unsigned long long n, S s)            \
	{                                                                       \
		for (unsigned long long i = GC_FIRST; i < n; i += GC_STRIDE)    \
			buf[i] = fn(buf[i], s);                                 \
	}                                                                       \
	GC_HOST_FINISH(gc_##op##_##sfx, T, S)

#define GC_FOLD(op, sfx, T, S, fn, fin)                                         \
	GC_GLOBAL gc_fold_##op##_##sfx(const unsigned long long *tab, unsigned long long nsrc, \
				       unsigned long long first, unsigned long long ndst, \
				       unsigned long long off, unsigned long long n, S s) \
	{                                                                       \
		for (unsigned long long i = GC_FIRST; i < n; i += GC_STRIDE) {  \
			T x = ((const T *)(tab[0] + off))[i];                   \
			GC_ROLLED                                               \
			for (unsigned long long q = 1; q < nsrc; q++)           \
				x = fn(x, ((const T *)(tab[q] + off))[i]);      \
			x = fin(x, s);                                          \
			GC_ROLLED                                               \
			for (unsigned long long d = first; d < first + ndst; d++) \
				((T *)(tab[d] + off))[i] = x;                   \
		}                                                               \
	}                                                                       \
	GC_HOST_FOLD(gc_fold_##op##_##sfx, T, S)

/* An op's combining kernel and its fold. */
#define GC_OP(op, sfx, T, S, fn)                                                \
	GC_COMBINE(op, sfx, T, fn)                                              \
	GC_FOLD(op, sfx, T, S, fn, gc_keep_##sfx)

#define GC_NUMERIC(sfx, T, S)                                                   \
	GC_KEEP(sfx, T, S)                                                      \
	GC_OP(sum, sfx, T, S, gc_add_##sfx)                                     \
	GC_OP(product, sfx, T, S, gc_mul_##sfx)                                 \
	GC_OP(min, sfx, T, S, gc_lo_##sfx)                                      \
	GC_OP(max, sfx, T, S, gc_hi_##sfx)                                      \
	GC_FINISH(avg, sfx, T, S, gc_div_##sfx)                                 \
	GC_FOLD(avg, sfx, T, S, gc_add_##sfx, gc_div_##sfx)

#define GC_INTEGER(sfx, T, S)                                                   \
	GC_NUMERIC(sfx, T, S)                                                   \
	GC_OP(band, sfx, T, S, gc_and_##sfx)                                    \
	GC_OP(bor, sfx, T, S, gc_or_##sfx)                                      \
	GC_OP(bxor, sfx, T, S, gc_xor_##sfx)

#define GC_FLOAT(sfx, T, S)                                                     \
	GC_NUMERIC(sfx, T, S)                                                   \
	GC_FINISH(premul_sum, sfx, T, S, gc_scale_##sfx)                        \
	GC_FOLD(premul_sum, sfx, T, S, gc_add_##sfx, gc_scale_##sfx)

GC_INTEGER(i8, signed char, long long)
GC_INTEGER(i16, short, long long)
GC_INTEGER(i32, int, long long)
GC_INTEGER(i64, long long, long long)
GC_INTEGER(u8, unsigned char, unsigned long long)
GC_INTEGER(u16, unsigned short, unsigned long long)
GC_INTEGER(u32, unsigned, unsigned long long)
GC_INTEGER(u64, unsigned long long, unsigned long long)
GC_FLOAT(f16, unsigned short, float)
GC_FLOAT(bf16, unsigned short, float)
GC_FLOAT(f32, float, float)
GC_FLOAT(f64, double, double)

/* bool: sum and max are or, product and min are and. */
GC_KEEP(bool, unsigned char, unsigned long long)
GC_OP(sum, bool, unsigned char, unsigned long long, gc_or_bool)
GC_OP(product, bool, unsigned char, unsigned long long, gc_and_bool)
GC_OP(min, bool, unsigned char, unsigned long long, gc_and_bool)
GC_OP(max, bool, unsigned char, unsigned long long, gc_or_bool)
GC_OP(band, bool, unsigned char, unsigned long long, gc_and_bool)
GC_OP(bor, bool, unsigned char, unsigned long long, gc_or_bool)
GC_OP(bxor, bool, unsigned char, unsigned long long, gc_xor_bool)
