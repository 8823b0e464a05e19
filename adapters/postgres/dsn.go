package postgres

import (
	"net/url"
	"regexp"
	"strings"
)

var kvPassword = regexp.MustCompile(`(?i)(password\s*=\s*)('(?:[^'\\]|\\.)*'|\S+)`)

// Redact returns dsn with its password, if any, replaced by "xxxxx", for
// logs and messages. It handles URLs (postgres://user:pw@host/db?password=…,
// and any other scheme) and key=value DSNs (password=…).
func Redact(dsn string) string {
	if strings.Contains(dsn, "://") {
		u, err := url.Parse(dsn)
		if err != nil {
			return "(unparsable DSN redacted)"
		}
		if _, has := u.User.Password(); has {
			u.User = url.UserPassword(u.User.Username(), "xxxxx")
		}
		q := u.Query()
		if q.Has("password") {
			q.Set("password", "xxxxx")
			u.RawQuery = q.Encode()
		}
		return u.String()
	}
	return kvPassword.ReplaceAllString(dsn, "${1}xxxxx")
}

func password(dsn string) string {
	if strings.Contains(dsn, "://") {
		u, err := url.Parse(dsn)
		if err != nil {
			return ""
		}
		if pw, ok := u.User.Password(); ok {
			return pw
		}
		return u.Query().Get("password")
	}
	if m := kvPassword.FindStringSubmatch(dsn); m != nil {
		return strings.Trim(m[2], "'")
	}
	return ""
}

// RedactText removes dsn, and its password wherever else it appears, from
// text: for error messages that may quote either.
func RedactText(text, dsn string) string {
	if red := Redact(dsn); red != dsn {
		text = strings.ReplaceAll(text, dsn, red)
	}
	if pw := password(dsn); pw != "" {
		text = strings.ReplaceAll(text, pw, "xxxxx")
	}
	return text
}
