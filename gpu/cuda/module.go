package cuda

import "unsafe"

// Module is device code loaded into a context (cuModuleLoadData). It is
// loaded from PTX, which the driver compiles for the context's device as
// it loads (its JIT keeps the result in a cache, ~/.nv/ComputeCache,
// so a later load of the same PTX is quick).
type Module struct {
	ctx *Context
	h   unsafe.Pointer // CUmodule
}

// Function is a kernel of a Module (cuModuleGetFunction), valid until the
// Module's Close.
type Function struct {
	mod  *Module
	h    unsafe.Pointer // CUfunction
	name string
}

// LoadModule loads ptx, PTX text such as nvcc -ptx writes, and compiles
// it for the context's device. The driver's error matches
// ResultUnsupportedPTX where the PTX is newer than the driver, and
// ResultInvalidPTX or ResultInvalidImage where it is not valid PTX.
func (c *Context) LoadModule(ptx []byte) (*Module, error) {
	const op = "Context.LoadModule"
	if err := c.lock(op); err != nil {
		return nil, err
	}
	defer c.mu.Unlock()
	if len(ptx) == 0 {
		return nil, invalid(op, "no PTX")
	}
	return c.loadModule(ptx)
}

// loadModule is LoadModule, c.mu held for writing.
func (c *Context) loadModule(ptx []byte) (*Module, error) {
	h, err := sysModuleLoad(c.h, ptx)
	if err != nil {
		return nil, err
	}
	m := &Module{ctx: c, h: h}
	c.modules[m] = struct{}{}
	return m, nil
}

// checkModule checks, c.mu held, that m is an open module of c.
func (c *Context) checkModule(op string, m *Module) error {
	switch {
	case m == nil || m.ctx == nil:
		return invalid(op, "Module not made by Context.LoadModule")
	case m.ctx != c:
		return invalid(op, "Module of another context")
	}
	if _, open := c.modules[m]; !open {
		return closed(op, "the Module")
	}
	return nil
}

// Function returns the module's kernel called name, its name in the PTX
// (a .entry). The driver's error matches ResultNotFound where there is
// none.
func (m *Module) Function(name string) (*Function, error) {
	const op = "Module.Function"
	if m == nil || m.ctx == nil {
		return nil, invalid(op, "Module not made by Context.LoadModule")
	}
	c := m.ctx
	if err := c.rlock(op); err != nil {
		return nil, err
	}
	defer c.mu.RUnlock()
	if err := c.checkModule(op, m); err != nil {
		return nil, err
	}
	return m.function(name)
}

// function is Function, c.mu held.
func (m *Module) function(name string) (*Function, error) {
	h, err := sysModuleFunction(m.ctx.h, m.h, name)
	if err != nil {
		return nil, err
	}
	return &Function{mod: m, h: h, name: name}, nil
}

// Name returns the function's name in its module.
func (f *Function) Name() string {
	if f == nil {
		return ""
	}
	return f.name
}

// Close unloads the module. Its kernels must not be queued nor running: a
// stream that ran them must be synchronized first. A second Close fails
// with ErrClosed.
func (m *Module) Close() error {
	const op = "Module.Close"
	if m == nil || m.ctx == nil {
		return invalid(op, "Module not made by Context.LoadModule")
	}
	c := m.ctx
	if err := c.lock(op); err != nil {
		return err
	}
	defer c.mu.Unlock()
	if err := c.checkModule(op, m); err != nil {
		return err
	}
	delete(c.modules, m)
	return sysModuleUnload(c.h, m.h)
}
