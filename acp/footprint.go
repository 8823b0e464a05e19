package acp

import (
	"encoding/json"
	"math/bits"
)

// The byte bound (WithMaxBytes) counts what the tracker keeps as memory,
// not as JSON: decoded, a JSON value of a few bytes costs the heap far
// more — an array element is an interface (16 bytes), a number or a
// string a header of its own besides its bytes, and the smallest object
// a map of a few hundred bytes — so a hostile agent's payload of tiny
// values would hold 6–20 times its JSON length. footprint estimates, from
// above, the heap a value decoded by decodeObject holds: every allocation
// rounded up to 16 bytes, slices by their capacity, a map by the slots
// Go's map allocates for its length (groups of 8 slots of a 16-byte key
// and a 16-byte value, at most 7/8 full, grown by doubling).
func footprint(v any) int {
	switch x := v.(type) {
	case jsonMap:
		return footprint(map[string]any(x))
	case map[string]any:
		n := alloc(mapHeader) + alloc(mapSlots(len(x))*(slotBytes+1))
		for k, e := range x {
			n += alloc(len(k)) + footprint(e)
		}
		return n
	case []any:
		n := alloc(ifaceBytes * cap(x))
		for _, e := range x {
			n += footprint(e)
		}
		return n
	case string:
		return alloc(stringHeader) + alloc(len(x))
	case json.Number:
		return alloc(stringHeader) + alloc(len(x))
	}
	return 0 // nil and booleans: held in their interface
}

const (
	ifaceBytes   = 16
	stringHeader = 16
	slotBytes    = 16 + ifaceBytes // a string key and an interface value
	mapHeader    = 64              // the map's header and its directory's
)

// mapSlots is how many slots a map of n entries has allocated at most.
func mapSlots(n int) int {
	if n <= 8 {
		return 8
	}
	return 1 << bits.Len(uint(n*8/7)) // the next power of two above n at 7/8
}

// alloc is an allocation of n bytes as the heap holds it.
func alloc(n int) int { return (n + 15) &^ 15 }
