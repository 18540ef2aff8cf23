/* Argument-list macros for writing Active Message handlers and sends with
 * 0..16 arguments in C (the numbered GASNet-EX calls need each arity
 * spelled out):
 *   AT_PARAMS_n  ", gex_AM_Arg_t a0, ..., gex_AM_Arg_t a<n-1>" (parameters)
 *   AT_LIST_n    ", a0, ..., a<n-1>"                           (those names)
 *   AT_VALS_n    ", v[0], ..., v[n-1]"                  (values from array v)
 *   AT_FOR_EACH_NARGS(X)  X(0) X(1) ... X(16)
 *   AT_CALL(f, ...)       f(...) after expanding the arguments, so a
 *                         variadic call macro such as gex_AM_RequestShort
 *                         counts the values an AT_VALS_n list expands to. */
#ifndef GEX_TESTS_API_ARG_LISTS_H_
#define GEX_TESTS_API_ARG_LISTS_H_

#define AT_CALL(f, ...) f(__VA_ARGS__)

#define AT_FOR_EACH_NARGS(X) \
  X(0)                       \
  X(1)                       \
  X(2)                       \
  X(3) X(4) X(5) X(6) X(7) X(8) X(9) X(10) X(11) X(12) X(13) X(14) X(15) X(16)

#define AT_PARAMS_0
#define AT_LIST_0
#define AT_VALS_0
#define AT_PARAMS_1 AT_PARAMS_0, gex_AM_Arg_t a0
#define AT_LIST_1 AT_LIST_0, a0
#define AT_VALS_1 AT_VALS_0, v[0]
#define AT_PARAMS_2 AT_PARAMS_1, gex_AM_Arg_t a1
#define AT_LIST_2 AT_LIST_1, a1
#define AT_VALS_2 AT_VALS_1, v[1]
#define AT_PARAMS_3 AT_PARAMS_2, gex_AM_Arg_t a2
#define AT_LIST_3 AT_LIST_2, a2
#define AT_VALS_3 AT_VALS_2, v[2]
#define AT_PARAMS_4 AT_PARAMS_3, gex_AM_Arg_t a3
#define AT_LIST_4 AT_LIST_3, a3
#define AT_VALS_4 AT_VALS_3, v[3]
#define AT_PARAMS_5 AT_PARAMS_4, gex_AM_Arg_t a4
#define AT_LIST_5 AT_LIST_4, a4
#define AT_VALS_5 AT_VALS_4, v[4]
#define AT_PARAMS_6 AT_PARAMS_5, gex_AM_Arg_t a5
#define AT_LIST_6 AT_LIST_5, a5
#define AT_VALS_6 AT_VALS_5, v[5]
#define AT_PARAMS_7 AT_PARAMS_6, gex_AM_Arg_t a6
#define AT_LIST_7 AT_LIST_6, a6
#define AT_VALS_7 AT_VALS_6, v[6]
#define AT_PARAMS_8 AT_PARAMS_7, gex_AM_Arg_t a7
#define AT_LIST_8 AT_LIST_7, a7
#define AT_VALS_8 AT_VALS_7, v[7]
#define AT_PARAMS_9 AT_PARAMS_8, gex_AM_Arg_t a8
#define AT_LIST_9 AT_LIST_8, a8
#define AT_VALS_9 AT_VALS_8, v[8]
#define AT_PARAMS_10 AT_PARAMS_9, gex_AM_Arg_t a9
#define AT_LIST_10 AT_LIST_9, a9
#define AT_VALS_10 AT_VALS_9, v[9]
#define AT_PARAMS_11 AT_PARAMS_10, gex_AM_Arg_t a10
#define AT_LIST_11 AT_LIST_10, a10
#define AT_VALS_11 AT_VALS_10, v[10]
#define AT_PARAMS_12 AT_PARAMS_11, gex_AM_Arg_t a11
#define AT_LIST_12 AT_LIST_11, a11
#define AT_VALS_12 AT_VALS_11, v[11]
#define AT_PARAMS_13 AT_PARAMS_12, gex_AM_Arg_t a12
#define AT_LIST_13 AT_LIST_12, a12
#define AT_VALS_13 AT_VALS_12, v[12]
#define AT_PARAMS_14 AT_PARAMS_13, gex_AM_Arg_t a13
#define AT_LIST_14 AT_LIST_13, a13
#define AT_VALS_14 AT_VALS_13, v[13]
#define AT_PARAMS_15 AT_PARAMS_14, gex_AM_Arg_t a14
#define AT_LIST_15 AT_LIST_14, a14
#define AT_VALS_15 AT_VALS_14, v[14]
#define AT_PARAMS_16 AT_PARAMS_15, gex_AM_Arg_t a15
#define AT_LIST_16 AT_LIST_15, a15
#define AT_VALS_16 AT_VALS_15, v[15]

#endif /* GEX_TESTS_API_ARG_LISTS_H_ */
