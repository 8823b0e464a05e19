package main

import "encoding/json"

// expvarField extracts one top-level field of a /debug/vars document.
func expvarField(doc []byte, name string) (string, error) {
	var all map[string]json.RawMessage
	if err := json.Unmarshal(doc, &all); err != nil {
		return "", err
	}
	return string(all[name]), nil
}
