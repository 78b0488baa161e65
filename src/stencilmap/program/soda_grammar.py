"""The SODA DSL grammar (Lark, LALR), after the SODA compiler's textX grammar.

Header statements may come in any order; inputs, params, locals and outputs each form one contiguous group.
``NAME(...)`` is one rule for casts, calls and field references: the front end tells them apart.
"""

GRAMMAR = r"""
start: _item*

_item: kernel | burst_width | unroll | iterate | feedback | border | cluster
     | input_stmt | param_stmt | local_stmt | output_stmt

kernel: "kernel" ":" NAME
burst_width: "burst" "width" ":" INT
unroll: "unroll" "factor" ":" INT
iterate: "iterate" ":" INT
feedback: "feedback" ":" feed ("," feed)*
feed: NAME "->" NAME
border: "border" ":" NAME
cluster: "cluster" ":" NAME

input_stmt: "input" [dram] NAME ":" NAME [tile]
dram: "dram" BANKS (BOR_OP BANKS)*
tile: "(" (INT ",")* STAR ")"
    | "(" (INT ",")+ ")"
param_stmt: "param" [dram] NAME ("," param_attr)* ":" NAME ("[" INT "]")*
param_attr: "dup" INT                                  -> param_dup
          | "partition" NAME ["factor" "=" INT] ["dim" "=" INT] -> param_partition
local_stmt: "local" NAME ":" let* lhs "=" expr
output_stmt: "output" [dram] NAME ":" let* lhs "=" expr
let: [NAME] NAME "=" expr
lhs: NAME "(" signed_int ("," signed_int)* ")"
signed_int: [SIGN] INT

?expr: lor
?lor: land | lor LOR_OP land -> binary
?land: bor | land LAND_OP bor -> binary
?bor: bxor | bor BOR_OP bxor -> binary
?bxor: band | bxor BXOR_OP band -> binary
?band: eq | band BAND_OP eq -> binary
?eq: rel | eq EQ_OP rel -> binary
?rel: add | rel REL_OP add -> binary
?add: mul | add ADD_OP mul -> binary
?mul: unary | mul MUL_OP unary -> binary
?unary: atom | UNARY_OP unary -> unary
?atom: NAME "(" expr ("," expr)* ")" -> apply
     | NAME ("[" INT "]")* -> var
     | FLOAT -> float_lit
     | INT -> int_lit
     | "(" expr ")"

LOR_OP: "||"
LAND_OP: "&&"
BOR_OP: "|"
BXOR_OP: "^"
BAND_OP: "&"
EQ_OP: "==" | "!="
REL_OP: "<=" | ">=" | "<" | ">"
ADD_OP: "+" | "-"
MUL_OP: "*" | "/" | "%"
UNARY_OP: "+" | "-" | "~" | "!"
SIGN: "+" | "-"
STAR: "*"

BANKS: /\d+(\.\d+)*/
FLOAT.2: /((\d*\.\d+|\d+\.)([eE][+-]?\d+)?|\d+[eE][+-]?\d+)[fFlL]?/
INT: /(0[xX][0-9a-fA-F]+|0[bB][01]+|\d+)([uU][lL]{0,2}|[lL]{1,2}[uU]?)?/
NAME: /[A-Za-z_][A-Za-z0-9_]*/

COMMENT: /#[^\n]*/
%import common.WS
%ignore WS
%ignore COMMENT
"""
