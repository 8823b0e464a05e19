-- per row; the arguments are core.Columns' values in order
SELECT subagentctx_upsert_7fc49a59($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12, $13, $14, $15, $16, $17, $18, $19, $20, $21, $22);
