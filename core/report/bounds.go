package report

// The bounds of each paged read: what a zero limit means, and the most a
// query may ask for (a query beyond them is refused, naming the bound).
const (
	// DefaultOverviewGroups and MaxOverviewGroups bound the groups of
	// one breakdown of an overview.
	DefaultOverviewGroups = 20
	MaxOverviewGroups     = 1000
	// DefaultHealthPairs and MaxHealthPairs bound the pairs the health
	// check lists in each direction.
	DefaultHealthPairs = 20
	MaxHealthPairs     = 10000
	// DefaultTurns and MaxTurns bound the turns of one page of a session.
	DefaultTurns = 25
	MaxTurns     = 500
	// DefaultFailures and MaxFailures bound one page of failures.
	DefaultFailures = 20
	MaxFailures     = 1000
	// DefaultStale and MaxStale bound the rows the stale read lists.
	DefaultStale = 100
	MaxStale     = 10000
	// MaxTimelineBuckets bounds the buckets a bounded window may be cut
	// into.
	MaxTimelineBuckets = 10000
)
