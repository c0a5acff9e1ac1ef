"""Hand-written parser for the jq language as accepted by gojq 0.12.x.

``parse(src)`` returns a :class:`~app.jqlang.nodes.Node` tree or raises
:class:`~app.jqlang.errors.JqParseError` whose message is exactly gojq's
``ParseError.Error()`` text.

The grammar is gojq's ``parser.go.y`` (the 0.12.8 - 0.12.11 revision, which is
what the Debian ``gojq`` 0.12.11 binary implements), re-expressed as recursive
descent + precedence climbing.  The LALR automaton reports an error at the
first token that cannot extend a valid prefix; this parser is written so that
it rejects at exactly the same token (it never backtracks and never looks
further ahead than gojq's one-token lookahead would allow).

Operator precedence, lowest first (same as gojq / jq)::

    def f: ...; rest      greedy: the rest extends as far right as possible
    term as $p | body     greedy
    label $x | body       greedy
    |                     right
    ,                     left
    //                    right
    = |= += -= *= /= %= //=   nonassoc
    or                    left
    and                   left
    == != < <= > >=       nonassoc
    + -                   left
    * / %                 left
    try BODY [catch C]    BODY/C are postfix-level operands: ``try a + b`` is
                          ``(try a) + b``
    if / reduce / foreach / try-catch   closed forms; may take postfix ``?``
                          but no suffixes (``if ... end[0]`` is an error)
    -term, +term, term suffixes (.a  [e]  [a:b]  []  ?  ."s")
"""

from __future__ import annotations

from typing import NoReturn

from .errors import JqParseError
from .lexer import KEYWORDS, tokenize
from .nodes import Node

__all__ = ["JqParseError", "gojq_json_string", "parse"]

_RIGHT, _LEFT, _NONASSOC = 0, 1, 2
_UPDATE_PREC = 4

# token type -> (precedence, associativity)
_BINOPS = {
    "|": (1, _RIGHT),
    ",": (2, _LEFT),
    "ALTOP": (3, _RIGHT),
    "UPDATEOP": (4, _NONASSOC),
    "or": (5, _LEFT),
    "and": (6, _LEFT),
    "CMPOP": (7, _NONASSOC),
    "+": (8, _LEFT),
    "-": (8, _LEFT),
    "*": (9, _LEFT),
    "/": (9, _LEFT),
    "%": (9, _LEFT),
}
_VALUED_OPS = frozenset({"ALTOP", "UPDATEOP", "CMPOP"})
_STRING_START = frozenset({"STRING", "STRSTART"})
_OBJKEY_TYPES = KEYWORDS | {"IDENT"}


def gojq_json_string(s: str) -> str:
    """JSON-encode ``s`` the way gojq's encoder does (no HTML escaping, ``\\u007f``)."""
    out = ['"']
    for ch in s:
        if " " <= ch <= "~":
            if ch == '"':
                out.append('\\"')
            elif ch == "\\":
                out.append("\\\\")
            else:
                out.append(ch)
        elif ch < " " or ch == "\x7f":
            if ch == "\b":
                out.append("\\b")
            elif ch == "\f":
                out.append("\\f")
            elif ch == "\n":
                out.append("\\n")
            elif ch == "\r":
                out.append("\\r")
            elif ch == "\t":
                out.append("\\t")
            else:
                out.append(f"\\u{ord(ch):04x}")
        elif "\ud800" <= ch <= "\udfff":
            out.append("\\ufffd")
        else:
            out.append(ch)
    out.append('"')
    return "".join(out)


def _make_error(src: str, tok: tuple) -> JqParseError:
    typ, val, start, end = tok
    if typ == "EOF":
        msg, text = "unexpected EOF", ""
    elif typ == "INVALID":
        text = src[start:end]
        msg = "invalid token " + gojq_json_string(text)
    elif typ == "BADESC":
        text = src[start:end]
        msg = 'invalid escape sequence "' + text + '" in string literal'
    elif typ == "UNTERM":
        msg, text = "unterminated string literal", ""
    elif typ == "STRSTART":
        # gojq does not update its current token text when it starts an
        # interpolated string, so the *previous* token text is reported.
        text = val
        msg = "unexpected token " + gojq_json_string(text)
        end = start + 1
    else:
        text = src[start:end]
        msg = "unexpected token " + gojq_json_string(text)
    offset = len(src[:end].encode("utf-8", "surrogatepass"))
    return JqParseError(msg, offset=offset, token=text, pos=start)


class _Parser:
    __slots__ = ("i", "src", "toks")

    def __init__(self, src: str) -> None:
        self.src = src
        self.toks = tokenize(src)
        self.i = 0

    # -- helpers ---------------------------------------------------------
    def _error(self) -> NoReturn:
        raise _make_error(self.src, self.toks[self.i])

    def _expect(self, typ: str) -> tuple:
        tok = self.toks[self.i]
        if tok[0] != typ:
            self._error()
        self.i += 1
        return tok

    def _end(self) -> int:
        return self.toks[self.i - 1][3]

    # -- program -----------------------------------------------------------
    def program(self) -> Node:
        toks = self.toks
        wrappers: list[tuple] = []  # (kind, value, meta, names, start)
        meta: Node | None
        tok = toks[self.i]
        if tok[0] == "module":
            self.i += 1
            meta = self.const_object()
            self._expect(";")
            wrappers.append(("module", None, meta, (), tok[2]))
        while True:
            tok = toks[self.i]
            if tok[0] == "import":
                self.i += 1
                path = self._expect("STRING")[1]
                self._expect("as")
                t = toks[self.i]
                if t[0] != "IDENT" and t[0] != "VAR":
                    self._error()
                self.i += 1
                meta = self.const_object() if toks[self.i][0] == "{" else None
                self._expect(";")
                wrappers.append(("import", path, meta, (t[1],), tok[2]))
            elif tok[0] == "include":
                self.i += 1
                path = self._expect("STRING")[1]
                meta = self.const_object() if toks[self.i][0] == "{" else None
                self._expect(";")
                wrappers.append(("include", path, meta, (), tok[2]))
            else:
                break
        defs = []
        while toks[self.i][0] == "def":
            defs.append(self.funcdef())
        if toks[self.i][0] == "EOF":
            body = None
        else:
            body = self.pipe()
            if toks[self.i][0] != "EOF":
                self._error()
        end = len(self.src)
        for name, params, fbody, start in reversed(defs):
            body = Node("funcdef", name, (fbody, body), params, start, end)
        for kind, value, meta, names, start in reversed(wrappers):
            body = Node(kind, value, (meta, body), names, start, end)
        if body is None:
            return Node("identity", None, (), (), 0, 0)
        return body

    # -- queries -----------------------------------------------------------
    def pipe(self) -> Node:
        return self.binary(0)

    def binary(self, min_prec: int) -> Node:
        left = self.operand(False)
        toks = self.toks
        last_nonassoc = -1
        while True:
            tok = toks[self.i]
            info = _BINOPS.get(tok[0])
            if info is None:
                return left
            prec, assoc = info
            if prec < min_prec:
                return left
            if prec == last_nonassoc:
                self._error()
            self.i += 1
            op = tok[1] if tok[0] in _VALUED_OPS else tok[0]
            kind = "update" if prec == _UPDATE_PREC else "binop"
            if assoc == _RIGHT:
                # Collect the whole chain iteratively, then fold to the right.
                operands = [left, self.binary(prec + 1)]
                ops = [op]
                while True:
                    t = toks[self.i]
                    inf = _BINOPS.get(t[0])
                    if inf is None or inf[0] != prec:
                        break
                    self.i += 1
                    ops.append(t[1] if t[0] in _VALUED_OPS else t[0])
                    operands.append(self.binary(prec + 1))
                node = operands[-1]
                for k in range(len(ops) - 1, -1, -1):
                    lhs = operands[k]
                    node = Node(kind, ops[k], (lhs, node), (), lhs.start, node.end)
                left = node
                last_nonassoc = -1
            else:
                right = self.binary(prec + 1)
                left = Node(kind, op, (left, right), (), left.start, right.end)
                last_nonassoc = prec if assoc == _NONASSOC else -1

    def operand(self, no_postfix: bool) -> Node:
        """A query operand: a term (possibly ``as``-bound), or a keyword form.

        ``no_postfix``: closed forms (if/reduce/foreach/try-catch) must not take
        a postfix ``?`` here (try / catch bodies, where gojq reduces first).
        """
        toks = self.toks
        tok = toks[self.i]
        t = tok[0]
        start = tok[2]
        if t == "def":
            name, params, body, _ = self.funcdef()
            rest = self.binary(0)
            return Node("funcdef", name, (body, rest), params, start, rest.end)
        if t == "try":
            self.i += 1
            body = self.operand(True)
            if toks[self.i][0] == "catch":
                self.i += 1
                handler = self.operand(True)
                node = Node("try", None, (body, handler), (), start, handler.end)
                return node if no_postfix else self._query_postfix(node)
            if toks[self.i][0] == "?":
                # %nonassoc between the empty catch clause and '?'
                self._error()
            return Node("try", None, (body, None), (), start, body.end)
        if t == "if":
            node = self.if_()
        elif t == "reduce":
            node = self.reduce_()
        elif t == "foreach":
            node = self.foreach_()
        elif t == "label":
            self.i += 1
            name = self._expect("VAR")[1]
            self._expect("|")
            body = self.binary(0)
            return Node("label", name, (body,), (), start, body.end)
        else:
            term = self.term()
            if toks[self.i][0] != "as":
                return term
            self.i += 1
            patterns = [self.pattern()]
            while toks[self.i][0] == "DESTALT":
                self.i += 1
                patterns.append(self.pattern())
            self._expect("|")
            body = self.binary(0)
            return Node("bind", None, (term, *patterns, body), (), start, body.end)
        return node if no_postfix else self._query_postfix(node)

    def _query_postfix(self, node: Node) -> Node:
        toks = self.toks
        while toks[self.i][0] == "?":
            self.i += 1
            node = Node("optional", None, (node,), (), node.start, self._end())
        return node

    def funcdef(self) -> tuple:
        toks = self.toks
        start = self._expect("def")[2]
        name = self._expect("IDENT")[1]
        params: list[str] = []
        t = toks[self.i][0]
        if t == "(":
            self.i += 1
            while True:
                p = toks[self.i]
                if p[0] != "IDENT" and p[0] != "VAR":
                    self._error()
                params.append(p[1])
                self.i += 1
                t = toks[self.i][0]
                if t == ";":
                    self.i += 1
                elif t == ")":
                    self.i += 1
                    break
                else:
                    self._error()
            self._expect(":")
        elif t == ":":
            self.i += 1
        else:
            self._error()
        body = self.pipe()
        self._expect(";")
        return name, tuple(params), body, start

    def if_(self) -> Node:
        toks = self.toks
        start = self._expect("if")[2]
        parts: list[Node | None] = [self.pipe()]  # cond, then, ..., else (None: none)
        self._expect("then")
        parts.append(self.pipe())
        while True:
            t = toks[self.i][0]
            if t == "elif":
                self.i += 1
                parts.append(self.pipe())
                self._expect("then")
                parts.append(self.pipe())
            elif t == "else":
                self.i += 1
                parts.append(self.pipe())
                self._expect("end")
                break
            elif t == "end":
                self.i += 1
                parts.append(None)
                break
            else:
                self._error()
        return Node("if", None, tuple(parts), (), start, self._end())

    def reduce_(self) -> Node:
        start = self._expect("reduce")[2]
        source = self.term()
        self._expect("as")
        pat = self.pattern()
        self._expect("(")
        init = self.pipe()
        self._expect(";")
        update = self.pipe()
        self._expect(")")
        return Node("reduce", None, (source, pat, init, update), (), start, self._end())

    def foreach_(self) -> Node:
        start = self._expect("foreach")[2]
        source = self.term()
        self._expect("as")
        pat = self.pattern()
        self._expect("(")
        init = self.pipe()
        self._expect(";")
        update = self.pipe()
        extract = None
        if self.toks[self.i][0] == ";":
            self.i += 1
            extract = self.pipe()
        self._expect(")")
        return Node("foreach", None, (source, pat, init, update, extract), (), start, self._end())

    # -- patterns ----------------------------------------------------------
    def pattern(self) -> Node:
        toks = self.toks
        tok = toks[self.i]
        t = tok[0]
        start = tok[2]
        if t == "VAR":
            self.i += 1
            return Node("pvar", tok[1], (), (), start, tok[3])
        if t == "[":
            self.i += 1
            elems = [self.pattern()]
            while toks[self.i][0] == ",":
                self.i += 1
                elems.append(self.pattern())
            self._expect("]")
            return Node("parray", None, tuple(elems), (), start, self._end())
        if t == "{":
            self.i += 1
            entries = [self.object_pattern_entry()]
            while toks[self.i][0] == ",":
                self.i += 1
                entries.append(self.object_pattern_entry())
            self._expect("}")
            return Node("pobject", None, tuple(entries), (), start, self._end())
        self._error()

    def object_pattern_entry(self) -> Node:
        toks = self.toks
        tok = toks[self.i]
        t = tok[0]
        start = tok[2]
        if t == "VAR":
            self.i += 1
            key = Node("var", tok[1], (), (), start, tok[3])
            if toks[self.i][0] != ":":
                return Node("pentry", None, (key, None), (), start, tok[3])
        elif t in _OBJKEY_TYPES:
            self.i += 1
            key = Node("objkey", tok[1], (), (), start, tok[3])
            if toks[self.i][0] != ":":
                self._error()
        elif t in _STRING_START:
            key = self.string()
            if toks[self.i][0] != ":":
                self._error()
        elif t == "(":
            self.i += 1
            q = self.pipe()
            self._expect(")")
            key = Node("paren", None, (q,), (), start, self._end())
            if toks[self.i][0] != ":":
                self._error()
        else:
            self._error()
        self.i += 1  # ':'
        pat = self.pattern()
        return Node("pentry", None, (key, pat), (), start, pat.end)

    # -- terms -------------------------------------------------------------
    def term(self) -> Node:
        toks = self.toks
        tok = toks[self.i]
        t = tok[0]
        start = tok[2]
        self.i += 1
        if t == ".":
            node = Node("identity", None, (), (), start, tok[3])
            if toks[self.i][0] in _STRING_START:
                s = self.string()
                node = Node("index", None, (node, s), (), start, s.end)
        elif t == "INDEX":
            node = Node("field", tok[1], (Node("identity", None, (), (), start, start + 1),), (), start, tok[3])
        elif t == "IDENT" or t == "MODIDENT":
            if toks[self.i][0] == "(":
                self.i += 1
                args = [self.pipe()]
                while True:
                    a = toks[self.i][0]
                    if a == ";":
                        self.i += 1
                        args.append(self.pipe())
                    elif a == ")":
                        self.i += 1
                        break
                    else:
                        self._error()
                node = Node("call", tok[1], tuple(args), (), start, self._end())
            else:
                node = Node("call", tok[1], (), (), start, tok[3])
        elif t == "VAR" or t == "MODVAR":
            node = Node("var", tok[1], (), (), start, tok[3])
        elif t == "NUMBER":
            node = Node("number", tok[1], (), (), start, tok[3])
        elif t in _STRING_START:
            self.i -= 1
            node = self.string()
        elif t == "(":
            q = self.pipe()
            self._expect(")")
            node = Node("paren", None, (q,), (), start, self._end())
        elif t == "[":
            if toks[self.i][0] == "]":
                self.i += 1
                node = Node("array", None, (), (), start, self._end())
            else:
                q = self.pipe()
                self._expect("]")
                node = Node("array", None, (q,), (), start, self._end())
        elif t == "{":
            node = self.object_(start)
        elif t == "null" or t == "true" or t == "false":
            node = Node(t, None, (), (), start, tok[3])
        elif t == "..":
            node = Node("recurse", None, (), (), start, tok[3])
        elif t == "-" or t == "+":
            operand = self.term()
            return Node("unary", t, (operand,), (), start, operand.end)
        elif t == "FORMAT":
            if toks[self.i][0] in _STRING_START:
                s = self.string()
                node = Node("format", tok[1], (s,), (), start, s.end)
            else:
                node = Node("format", tok[1], (), (), start, tok[3])
        elif t == "break":
            name = self._expect("VAR")[1]
            node = Node("break", name, (), (), start, self._end())
        else:
            self.i -= 1
            self._error()
        return self._suffixes(node)

    def _suffixes(self, node: Node) -> Node:
        toks = self.toks
        while True:
            tok = toks[self.i]
            t = tok[0]
            if t == "INDEX":
                self.i += 1
                node = Node("field", tok[1], (node,), (), node.start, tok[3])
            elif t == "[":
                self.i += 1
                node = self._bracket(node)
            elif t == "?":
                self.i += 1
                node = Node("optional", None, (node,), (), node.start, tok[3])
            elif t == ".":
                self.i += 1
                nt = toks[self.i][0]
                if nt == "[":
                    self.i += 1
                    node = self._bracket(node)
                elif nt in _STRING_START:
                    s = self.string()
                    node = Node("index", None, (node, s), (), node.start, s.end)
                else:
                    self._error()
            else:
                return node

    def _bracket(self, target: Node) -> Node:
        # '[' already consumed
        toks = self.toks
        t = toks[self.i][0]
        if t == "]":
            self.i += 1
            return Node("iterate", None, (target,), (), target.start, self._end())
        if t == ":":
            self.i += 1
            hi = self.pipe()
            self._expect("]")
            return Node("slice", None, (target, None, hi), (), target.start, self._end())
        lo = self.pipe()
        t = toks[self.i][0]
        if t == "]":
            self.i += 1
            return Node("index", None, (target, lo), (), target.start, self._end())
        if t == ":":
            self.i += 1
            if toks[self.i][0] == "]":
                self.i += 1
                return Node("slice", None, (target, lo, None), (), target.start, self._end())
            hi = self.pipe()
            self._expect("]")
            return Node("slice", None, (target, lo, hi), (), target.start, self._end())
        self._error()

    def string(self) -> Node:
        toks = self.toks
        tok = toks[self.i]
        self.i += 1
        if tok[0] == "STRING":
            return Node("string", tok[1], (), (), tok[2], tok[3])
        # STRSTART
        parts = []
        while True:
            p = toks[self.i]
            t = p[0]
            if t == "STRING":
                self.i += 1
                parts.append(Node("string", p[1], (), (), p[2], p[3]))
            elif t == "STRQUERY":
                self.i += 1
                parts.append(self.pipe())
                self._expect(")")
            elif t == "STREND":
                self.i += 1
                return Node("interp", None, tuple(parts), (), tok[2], p[3])
            else:
                self._error()

    def object_(self, start: int) -> Node:
        # '{' already consumed
        toks = self.toks
        entries = []
        if toks[self.i][0] == "}":
            self.i += 1
            return Node("object", None, (), (), start, self._end())
        while True:
            tok = toks[self.i]
            t = tok[0]
            if t in _OBJKEY_TYPES or t == "VAR":
                self.i += 1
                key = Node("var" if t == "VAR" else "objkey", tok[1], (), (), tok[2], tok[3])
                optional_value = True
            elif t in _STRING_START:
                key = self.string()
                optional_value = True
            elif t == "(":
                self.i += 1
                q = self.pipe()
                self._expect(")")
                key = Node("paren", None, (q,), (), tok[2], self._end())
                optional_value = False
            else:
                self._error()
            if toks[self.i][0] == ":":
                self.i += 1
                val = self.object_value()
                entries.append(Node("entry", None, (key, val), (), key.start, val.end))
            elif optional_value:
                entries.append(Node("entry", None, (key, None), (), key.start, key.end))
            else:
                self._error()
            t = toks[self.i][0]
            if t == ",":
                self.i += 1
                if toks[self.i][0] == "}":
                    self.i += 1
                    break
            elif t == "}":
                self.i += 1
                break
            else:
                self._error()
        return Node("object", None, tuple(entries), (), start, self._end())

    def object_value(self) -> Node:
        toks = self.toks
        terms = [self.term()]
        while toks[self.i][0] == "|":
            self.i += 1
            terms.append(self.term())
        node = terms[-1]
        for k in range(len(terms) - 2, -1, -1):
            node = Node("binop", "|", (terms[k], node), (), terms[k].start, node.end)
        return node

    # -- constant terms (module / import metadata) --------------------------
    def const_object(self) -> Node:
        toks = self.toks
        start = self._expect("{")[2]
        entries = []
        if toks[self.i][0] == "}":
            self.i += 1
            return Node("object", None, (), (), start, self._end())
        while True:
            tok = toks[self.i]
            t = tok[0]
            if t == "IDENT" or t in KEYWORDS:
                key = Node("objkey", tok[1], (), (), tok[2], tok[3])
            elif t == "STRING":
                key = Node("string", tok[1], (), (), tok[2], tok[3])
            else:
                self._error()
            self.i += 1
            self._expect(":")
            val = self.const_term()
            entries.append(Node("entry", None, (key, val), (), key.start, val.end))
            t = toks[self.i][0]
            if t == ",":
                self.i += 1
                if toks[self.i][0] == "}":
                    self.i += 1
                    break
            elif t == "}":
                self.i += 1
                break
            else:
                self._error()
        return Node("object", None, tuple(entries), (), start, self._end())

    def const_term(self) -> Node:
        toks = self.toks
        tok = toks[self.i]
        t = tok[0]
        if t == "{":
            return self.const_object()
        if t == "[":
            self.i += 1
            if toks[self.i][0] == "]":
                self.i += 1
                return Node("array", None, (), (), tok[2], self._end())
            elems = [self.const_term()]
            while toks[self.i][0] == ",":
                self.i += 1
                elems.append(self.const_term())
            self._expect("]")
            node = elems[-1]
            for k in range(len(elems) - 2, -1, -1):
                node = Node("binop", ",", (elems[k], node), (), elems[k].start, node.end)
            return Node("array", None, (node,), (), tok[2], self._end())
        self.i += 1
        if t == "NUMBER":
            return Node("number", tok[1], (), (), tok[2], tok[3])
        if t == "STRING":
            return Node("string", tok[1], (), (), tok[2], tok[3])
        if t == "null" or t == "true" or t == "false":
            return Node(t, None, (), (), tok[2], tok[3])
        self.i -= 1
        self._error()


def parse(src: str) -> Node:
    """Parse a jq query the way gojq 0.12.x's ``gojq.Parse`` does.

    Raises :class:`JqParseError` (a ``ValueError``) with gojq's error message.
    Pathologically deep nesting that exceeds Python's recursion limit is
    reported as ``JqParseError("query is nested too deeply")``.
    """
    if not isinstance(src, str):
        raise TypeError(f"jq query must be a str, not {type(src).__name__}")
    try:
        return _Parser(src).program()
    except RecursionError:
        raise JqParseError("query is nested too deeply", offset=-1, token="", pos=-1) from None
