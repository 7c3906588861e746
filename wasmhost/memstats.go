package wasmhost

// MemoryPerVM returns the size in bytes of each VM's linear memory, read on
// the VM's own loop. A Wasm memory never shrinks, so the figure is the
// guest's high-water mark; a VM that has shut down reports 0.
func (h *Host) MemoryPerVM() []uint32 {
	out := make([]uint32, len(h.vms))
	for i, v := range h.vms {
		v.run(func() error {
			if v.mod != nil {
				out[i] = v.mod.Memory().Size()
			}
			return nil
		})
	}
	return out
}
