/*
 * dlib.h is what the packages that load a library at run time share
 * (gpu/cuda libcuda, nccl libnccl, rdma/verbs libibverbs): opening it,
 * binding its entry points, and saying why either failed. Each package's
 * own header includes it, through -I in its cgo CFLAGS.
 */
#ifndef GOCOMMS_DLIB_H
#define GOCOMMS_DLIB_H

#include <dlfcn.h>
#include <stddef.h>
#include <string.h>

/* dlib_copy copies src into dst, n bytes, cut short and terminated. */
static void dlib_copy(char *dst, size_t n, const char *src)
{
	if (n == 0)
		return;
	strncpy(dst, src, n - 1);
	dst[n - 1] = 0;
}

/* dlib_open opens the library called name, or returns NULL with the
 * loader's reason in err. */
static void *dlib_open(const char *name, char *err, size_t errlen)
{
	const char *msg;
	void *h;

	dlerror();
	h = dlopen(name, RTLD_NOW | RTLD_LOCAL);
	if (!h) {
		msg = dlerror();
		dlib_copy(err, errlen, msg ? msg : "dlopen failed");
	}
	return h;
}

/*
 * DLIB_BIND sets field to the entry point sym of the library h. Where h
 * lacks it and required is true, it names sym in err, closes h, and
 * returns -2 from the function it is used in; otherwise field stays NULL.
 */
#define DLIB_BIND(h, field, sym, required, err, errlen)                 \
	do {                                                            \
		*(void **)(&(field)) = dlsym(h, sym);                   \
		if (!(field) && (required)) {                           \
			dlib_copy(err, errlen, sym);                    \
			dlclose(h);                                     \
			return -2;                                      \
		}                                                       \
	} while (0)

#endif
