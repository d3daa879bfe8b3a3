// Package config owns ncpos's one configuration schema: the ncpos.toml file
// that is compiled into the image and may be overridden at run time by
// /perm/ncpos/ncpos.toml, the embedded default, and the platform profiles
// that map front-panel port labels to Linux interfaces.
//
// An invalid file must never take effect, and the person who wrote it has
// no shell on the appliance to debug it. So Parse rejects unknown keys and
// wrong types, checks every semantic rule, collects all problems rather than
// the first, and names each one as file:line: field: what is wrong, what was
// expected.
package config
