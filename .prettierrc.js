// Extends the create-plugin style base in .config/.
module.exports = {
  ...require('./.config/.prettierrc.js'),
};
