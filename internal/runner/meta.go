package runner

// UpdateMeta replaces the row's Meta with f of the current one and
// registers the row again at the next step, as a change of entity types
// does.
func (r *Runner) UpdateMeta(f func(meta string) string) {
	r.mu.Lock()
	r.opts.Meta = f(r.opts.Meta)
	r.typesDirty = true
	r.mu.Unlock()
}
