package backfill

// WithHook injects a function called between the statements of the upgrade
// and of the backfill transaction; an error it returns aborts the
// transaction there (fault injection for tests).
func WithHook(h func(stage string) error) Option { return func(m *Migrator) { m.hook = h } }
