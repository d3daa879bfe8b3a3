package pcapfilter

import "strings"

type tokKind int

const (
	tEOF  tokKind = iota
	tWord         // keywords, numbers, addresses and names
	tOp           // parentheses, operators and the arithmetic symbols
)

type token struct {
	kind tokKind
	text string
	pos  int // byte offset in the expression
	// escaped is a word written with a leading backslash ("\ip"): a name,
	// never a keyword.
	escaped bool
}

// ops are the symbols pcap-filter(7) knows, longest first; most are only
// recognised to be refused as arithmetic.
var ops = []string{"&&", "||", "!=", "==", "<=", ">=", "<<", ">>",
	"(", ")", "!", "<", ">", "=", "&", "|", "[", "]", "+", "-", "*", "/", "%", "^"}

// lex splits an expression into tokens. Words run on over '.', ':' and
// '-' so that addresses ("10.0.0.1", "2001:db8::1", "0:1:2:3:4:5") and
// port ranges ("1024-2047") are one word, as in libpcap's scanner.
func lex(src string) []token {
	var toks []token
	for i := 0; i < len(src); {
		c := src[i]
		switch {
		case strings.IndexByte(" \t\n\r", c) >= 0:
			i++
		case c == '\\':
			j := i + 1
			for j < len(src) && strings.IndexByte(" \t\n\r!()", src[j]) < 0 {
				j++
			}
			if j == i+1 {
				fail(i, `a name must follow "\"`)
			}
			toks = append(toks, token{kind: tWord, text: src[i+1 : j], pos: i, escaped: true})
			i = j
		case isWordByte(c):
			j := i + 1
			for j < len(src) && (isWordByte(src[j]) || src[j] == '.' || src[j] == '-') {
				j++
			}
			toks = append(toks, token{kind: tWord, text: src[i:j], pos: i})
			i = j
		default:
			k := 0
			for k < len(ops) && !strings.HasPrefix(src[i:], ops[k]) {
				k++
			}
			if k == len(ops) {
				fail(i, "unexpected character %q", rune(c))
			}
			toks = append(toks, token{kind: tOp, text: ops[k], pos: i})
			i += len(ops[k])
		}
	}
	return append(toks, token{kind: tEOF, pos: len(src)})
}

func isWordByte(c byte) bool {
	return 'a' <= c && c <= 'z' || 'A' <= c && c <= 'Z' || '0' <= c && c <= '9' || c == '_' || c == ':'
}
